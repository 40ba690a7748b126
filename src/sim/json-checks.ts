// Checks for configuration read from JSON (network profiles, scenarios): each failure throws an
// Error whose message names the field's path and what was wrong.

export type JsonObject = Record<string, unknown>;

/** A short description of a value for an error message. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) {
    return String(value);
  }
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** `value` as an object, or an error naming `path`. */
export function expectObject(value: unknown, path: string): JsonObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`${path}: must be an object, got ${describeValue(value)}`);
  }
  return value as JsonObject;
}

/** Throws naming the first key of `obj` that is not `allowed`. */
export function rejectUnknown(obj: JsonObject, path: string, allowed: ReadonlySet<string>): void {
  for (const key of Object.keys(obj)) {
    if (!allowed.has(key)) {
      throw new Error(`${path}: unknown field ${JSON.stringify(key)} (allowed: ${[...allowed].join(', ')})`);
    }
  }
}

/** `obj[key]` as a string of 1..maxLength characters, or an error naming `path.key`. */
export function readString(obj: JsonObject, key: string, path: string, maxLength: number): string {
  const value = obj[key];
  if (typeof value !== 'string' || value.length === 0 || value.length > maxLength) {
    throw new Error(
      `${path}.${key}: must be a string of 1 to ${maxLength} characters, got ${describeValue(value)}`,
    );
  }
  return value;
}
