// A conditioned endpoint: any datagram endpoint (a real UDP socket, say) seen through the network
// conditioner, so a profile applies to real sockets too: what it sends crosses the profile's "up"
// link, what it receives its "down" link, each held back until the conditioner's delivery time.

import { LinkConditioner } from '../net/conditioner.ts';
import { HeldDatagrams } from '../net/held-datagrams.ts';
import type { NetworkProfile } from '../net/profile.ts';
import { type DatagramEndpoint, MAX_PACKET_BYTES, type PacketHandler } from '../net/transport.ts';
import { Random } from '../sim/random.ts';

/**
 * Wraps `inner` with a profile. Its clock is the latest time given to setTime, pump or poll (ms
 * since the profile's time 0); sends are stamped with it. Call `pump(nowMs)` often (every
 * millisecond or so) so held datagrams leave and arrivals are stamped on time; `poll` pumps too.
 */
export class ConditionedEndpoint implements DatagramEndpoint {
  readonly up: LinkConditioner;
  readonly down: LinkConditioner;
  private readonly outgoing = new HeldDatagrams();
  private readonly incoming = new HeldDatagrams();
  private clockMs = 0;
  private readonly forward = (to: string, data: Uint8Array): void => this.inner.send(to, data);
  private readonly arrive = (from: string, data: Uint8Array): void => {
    const v = this.down.submit(this.clockMs, data.length);
    if (v.copies >= 1) this.incoming.hold(from, data, v.firstMs);
    if (v.copies === 2) this.incoming.hold(from, data, v.secondMs);
  };

  constructor(
    private readonly inner: DatagramEndpoint,
    profile: NetworkProfile,
    seed: number,
  ) {
    const seeds = new Random(seed);
    this.up = new LinkConditioner({ seed: seeds.nextU32(), profile, direction: 'up' });
    this.down = new LinkConditioner({ seed: seeds.nextU32(), profile, direction: 'down' });
  }

  get address(): string {
    return this.inner.address;
  }

  /** Moves the clock to `nowMs` (never backwards). */
  setTime(nowMs: number): void {
    if (nowMs > this.clockMs) this.clockMs = nowMs;
  }

  send(to: string, data: Uint8Array): void {
    if (data.length > MAX_PACKET_BYTES) {
      this.inner.send(to, data);
      return;
    }
    const v = this.up.submit(this.clockMs, data.length);
    if (v.copies >= 1) this.outgoing.hold(to, data, v.firstMs);
    if (v.copies === 2) this.outgoing.hold(to, data, v.secondMs);
    this.outgoing.release(this.clockMs, this.forward);
  }

  /** Sends every held datagram due by `nowMs`, then takes in what the inner endpoint received. */
  pump(nowMs: number): void {
    this.setTime(nowMs);
    this.outgoing.release(this.clockMs, this.forward);
    this.inner.poll(this.clockMs, this.arrive);
  }

  poll(nowMs: number, onPacket: PacketHandler): void {
    this.pump(nowMs);
    this.incoming.release(this.clockMs, onPacket);
  }

  /** Closes the inner endpoint; held datagrams are dropped. */
  close(): void | Promise<void> {
    this.outgoing.clear();
    this.incoming.clear();
    return this.inner.close();
  }
}
