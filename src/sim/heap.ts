// A binary min-heap over a caller's ordering, for schedulers that pop the earliest item (the
// memory network's deliveries, a conditioned endpoint's held datagrams). No allocation once grown.

export class MinHeap<T> {
  private readonly items: T[] = [];
  private readonly before: (a: T, b: T) => boolean;
  size = 0;

  /** `before(a, b)`: true when `a` must come out before `b`. */
  constructor(before: (a: T, b: T) => boolean) {
    this.before = before;
  }

  /** The earliest item, or undefined when empty. */
  peek(): T | undefined {
    return this.size > 0 ? this.items[0] : undefined;
  }

  push(item: T): void {
    const items = this.items;
    let i = this.size++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(item, items[parent])) break;
      items[i] = items[parent];
      i = parent;
    }
    items[i] = item;
  }

  /** Removes and returns the earliest item (the heap must not be empty). */
  pop(): T {
    const items = this.items;
    const top = items[0];
    const last = items[--this.size];
    const n = this.size;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && this.before(items[child + 1], items[child])) child++;
      if (!this.before(items[child], last)) break;
      items[i] = items[child];
      i = child;
    }
    if (n > 0) items[i] = last;
    return top;
  }

  /** Removes every item, handing each to `release`. */
  drain(release: (item: T) => void): void {
    for (let i = 0; i < this.size; i++) release(this.items[i]);
    this.size = 0;
  }
}
