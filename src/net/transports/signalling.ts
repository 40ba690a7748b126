// The WebRTC signalling messages (offer, answer, ICE candidate): their JSON form, strict validation, and candidate address checks; browser-safe.
//
// Each message is one WebSocket text message holding one JSON object with exactly these keys:
//   +-----------+-----------------------------------+--------------------------------------+
//   | type      | other keys                        | sent by                              |
//   +-----------+-----------------------------------+--------------------------------------+
//   | offer     | sdp: string (1..MAX_SDP_CHARS)    | client, once, first                  |
//   | answer    | sdp: string (1..MAX_SDP_CHARS)    | server, once                         |
//   | candidate | candidate: string (1..MAX_CANDIDATE_CHARS, "candidate:..." or             |
//   |           | "a=candidate:..."), mid: string (0..MAX_MID_CHARS)  | both, any number     |
//   +-----------+-----------------------------------+--------------------------------------+
// A message over MAX_SIGNAL_BYTES, not JSON, or with a missing, extra or ill-typed key is
// malformed: the receiver closes that signalling socket.

/** Largest signalling message accepted, in UTF-16 code units of its text (at most 3 bytes each in UTF-8). */
export const MAX_SIGNAL_BYTES = 16 * 1024;
export const MAX_SDP_CHARS = 12 * 1024;
export const MAX_CANDIDATE_CHARS = 512;
export const MAX_MID_CHARS = 16;

export type SignalMessage =
  | { type: 'offer'; sdp: string }
  | { type: 'answer'; sdp: string }
  | { type: 'candidate'; candidate: string; mid: string };

export type SignalParse = { ok: true; message: SignalMessage } | { ok: false; error: string };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function hasExactKeys(value: Record<string, unknown>, keys: readonly string[]): boolean {
  const own = Object.keys(value);
  if (own.length !== keys.length) return false;
  for (const key of keys) if (!Object.hasOwn(value, key)) return false;
  return true;
}

/** Printable ASCII plus CR, LF and tab: what SDP and candidates are made of. */
function isSdpText(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c > 126 || (c < 32 && c !== 9 && c !== 10 && c !== 13)) return false;
  }
  return true;
}

function checkSdp(sdp: unknown): string {
  if (typeof sdp !== 'string') return 'sdp is not a string';
  if (sdp.length === 0 || sdp.length > MAX_SDP_CHARS) return `sdp length ${sdp.length} out of range`;
  if (!sdp.startsWith('v=0')) return 'sdp does not start with v=0';
  if (!isSdpText(sdp)) return 'sdp has a character outside printable ASCII';
  return '';
}

function checkCandidate(candidate: unknown, mid: unknown): string {
  if (typeof candidate !== 'string') return 'candidate is not a string';
  if (candidate.length === 0 || candidate.length > MAX_CANDIDATE_CHARS) {
    return `candidate length ${candidate.length} out of range`;
  }
  if (!candidate.startsWith('candidate:') && !candidate.startsWith('a=candidate:')) {
    return 'candidate does not start with candidate:';
  }
  if (!isSdpText(candidate) || /[\r\n]/.test(candidate)) return 'candidate has a control character';
  if (typeof mid !== 'string') return 'mid is not a string';
  if (mid.length > MAX_MID_CHARS) return `mid length ${mid.length} out of range`;
  if (!isSdpText(mid) || /[\r\n\t ]/.test(mid)) return 'mid has a space or control character';
  return '';
}

/**
 * Parses and validates one signalling message from the network. Never throws: anything but a
 * well-formed message (see the table at the top of this file) gives `{ ok: false, error }`.
 */
export function parseSignal(text: unknown): SignalParse {
  if (typeof text !== 'string') return { ok: false, error: 'not a text message' };
  if (text.length > MAX_SIGNAL_BYTES) return { ok: false, error: `message of ${text.length} chars too long` };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, error: 'not JSON' };
  }
  if (!isRecord(value)) return { ok: false, error: 'not a JSON object' };
  const type = value.type;
  if (type === 'offer' || type === 'answer') {
    if (!hasExactKeys(value, ['type', 'sdp'])) return { ok: false, error: `${type}: wrong keys` };
    const error = checkSdp(value.sdp);
    if (error !== '') return { ok: false, error: `${type}: ${error}` };
    return { ok: true, message: { type, sdp: value.sdp as string } };
  }
  if (type === 'candidate') {
    if (!hasExactKeys(value, ['type', 'candidate', 'mid']))
      return { ok: false, error: 'candidate: wrong keys' };
    const error = checkCandidate(value.candidate, value.mid);
    if (error !== '') return { ok: false, error: `candidate: ${error}` };
    return {
      ok: true,
      message: { type: 'candidate', candidate: value.candidate as string, mid: value.mid as string },
    };
  }
  return { ok: false, error: 'unknown type' };
}

/** Encodes one message as JSON text. Throws an Error naming the field if it would not pass parseSignal. */
export function encodeSignal(message: SignalMessage): string {
  let error: string;
  if (message.type === 'offer' || message.type === 'answer') error = checkSdp(message.sdp);
  else if (message.type === 'candidate') error = checkCandidate(message.candidate, message.mid);
  else error = `unknown type ${JSON.stringify((message as { type: unknown }).type)}`;
  if (error !== '') throw new Error(`encodeSignal: ${message.type}: ${error}`);
  const text = JSON.stringify(message);
  if (text.length > MAX_SIGNAL_BYTES)
    throw new Error(`encodeSignal: message of ${text.length} chars too long`);
  return text;
}

/**
 * The connection address of an ICE candidate line ("candidate:F C PROTO PRIO ADDRESS PORT typ
 * ...", with or without "a="), or '' when the line does not have one.
 */
export function candidateAddress(candidate: string): string {
  const fields = candidate.trim().split(/\s+/);
  return fields.length >= 8 && fields[6] === 'typ' ? fields[4] : '';
}

/**
 * Decides which remote ICE candidates may be used, by connection address: null accepts every
 * candidate; a list accepts only candidates on one of those addresses (e.g. ["127.0.0.1"] in
 * tests, so connectivity checks never leave loopback).
 */
export function candidateAllowed(candidate: string, allowedAddresses: readonly string[] | null): boolean {
  if (allowedAddresses === null) return true;
  const address = candidateAddress(candidate);
  return address !== '' && allowedAddresses.includes(address);
}

/**
 * A remote SDP with every candidate line ("a=candidate:") that `allowedAddresses` refuses taken
 * out; the SDP unchanged when it is null.
 */
export function filterSdpCandidates(sdp: string, allowedAddresses: readonly string[] | null): string {
  if (allowedAddresses === null) return sdp;
  const lines = sdp.split(/\r?\n/);
  const kept: string[] = [];
  for (const line of lines) {
    if (line.startsWith('a=candidate:') && !candidateAllowed(line, allowedAddresses)) continue;
    kept.push(line);
  }
  return kept.join('\r\n');
}
