// The client loop (the paper's): sample input, build a command for the frame's time and send it
// with every unacknowledged one, read the server's packets, predict the local player, render.
// Driven by time passed in: `update(nowMs, input)` once per frame.

import { DEFAULT_PROTOCOL_ID, DEFAULT_PROTOCOL_VERSION } from '../net/channel.ts';
import { ClientConnection, type ConnectionState } from '../net/client-connection.ts';
import { type ConnectToken, MAX_CONNECT_TOKEN_BYTES, TOKEN_CLIENT_KEY_BYTES } from '../net/connect-token.ts';
import { PACKET_TAG_BYTES, type PacketCipher } from '../net/packet-crypto.ts';
import type { DatagramEndpoint } from '../net/transport.ts';
import type { BitStream } from '../protocol/bitstream.ts';
import {
  type ClientFlags,
  type CommandRun,
  checkEventTable,
  createClientFlags,
  createServerFrame,
  createWireEvent,
  FIRST_SEQUENCE_SHORT_REACH,
  MAX_COMMAND_BASE_GAP,
  MAX_COMMAND_SKIP,
  MAX_COMMANDS_PER_PACKET,
  type ServerFrame,
  type ServerFrameCodec,
  serializeClientFlags,
  serializeCommandRun,
  serializeServerFrame,
  type WireEvent,
} from '../protocol/frames.ts';
import { PlayerStateHistory } from '../protocol/player-state.ts';
import {
  CMD_MSEC_MAX,
  copyUserCommand,
  createUserCommand,
  nextRandomSeed,
  quantizeUserCommand,
  type UserCommand,
} from '../protocol/usercmd.ts';
import { type GameDefinition, type GameEventSink, gameSchemaHash } from '../sim/game.ts';
import { Random } from '../sim/random.ts';
import { SequenceBuffer } from '../sim/ring.ts';
import {
  checkViewAcceptanceLimits,
  DEFAULT_VIEW_ACCEPTANCE_LIMITS,
  judgeView,
  VIEW_HONOURED,
  type ViewAcceptanceLimits,
} from '../sim/view-acceptance.ts';
import { ServerClock, type ServerClockConfig } from './clock.ts';
import { AdaptiveDelay, defaultInterpolationDelayMs, framesLostBefore } from './delay.ts';
import { PACKET_IN, PACKET_OUT, PacketHistory } from './packet-history.ts';
import { type PredictionConfig, Predictor } from './prediction.ts';
import { SnapshotReader } from './snapshot-reader.ts';
import { RemoteView, type RemoteViewConfig } from './view.ts';

export interface ClientConfig {
  protocolId: number;
  protocolVersion: number;
  /** Snapshots per second asked of the server. */
  updateRate: number;
  /** Bytes per second the server may send this client. */
  rateBytesPerSecond: number;
  /**
   * Most command packets sent per second: frames faster than this fold their commands into the
   * next packet (the default 64 sends one packet a frame up to 64 frames a second; 30 at 60 frames a
   * second sends two commands a packet). Each packet costs its header and authentication tag, so
   * this, more than the commands, sets the up-link; but the server runs what a packet brings when
   * it arrives, so fewer packets move the player in coarser steps that others see and that
   * predict worse in snapshots.
   */
  commandRate: number;
  /**
   * Most bytes per second of command packets, headers included (the up-link budget). A packet
   * goes only when the budget allows, so where loss asks for more copies of each command the
   * packets go further apart and carry more commands each, and the up-link stays within this.
   */
  upRateBytesPerSecond: number;
  /**
   * How often a command is repeated. 'bounded' (the default): in as many packets as the measured
   * up-link loss needs (`commandCopies`: one on a loss-free link), within the up-link budget, and
   * sent again whenever the acknowledgements show every copy lost (the up-link grows with loss,
   * not with the round trip; where the loss needs more copies than the budget pays for, some
   * commands are lost). 'acknowledged': in every packet until a packet carrying it is
   * acknowledged (the up-link grows with the round trip, up to the budget).
   */
  commandRedundancy: 'acknowledged' | 'bounded';
  /** Connection attempts are resent this often until answered. */
  connectRetryMs: number;
  /** Give up connecting after this long. */
  connectTimeoutMs: number;
  /**
   * The server's X25519 public key (`GameServer.publicKey`), when a backend handed it over a
   * trusted channel: a challenge with another key is ignored, so nobody on the path can stand in
   * for the server. Omitted, the first challenge's key is taken.
   */
  serverPublicKey?: Uint8Array;
  /**
   * A connect token from the game's backend (`issueConnectToken` there, `decodeConnectToken`
   * here), for a server that takes only those (`ServerConfig.connectTokens`).
   */
  connectToken?: ConnectToken;
  /**
   * Makes the packet cipher (ChaCha20-Poly1305) of each direction from its 32-byte key. Omitted:
   * `nobleCipher`, in JavaScript, for browsers and anywhere; a client in Node may give
   * `nodeCipher` (backstep/node: OpenSSL, the server's), interchangeable on the wire.
   */
  packetCipher?: (key: Uint8Array) => PacketCipher;
  /** The server silent this long means the connection is gone. */
  timeoutMs: number;
  /** Seed for the commands' shared random seeds and the connection nonce. */
  seed: number;
  /**
   * How far behind the newest server time remote entities are drawn, ms, or how it is chosen.
   * 'adaptive' (AdaptiveDelay) is the smallest delay that kept the view interpolating 99.5 % of
   * the time lately, measured from how stale snapshots get, up to 500 ms: it grows ahead of bursts
   * and jitter. 0 (the default) is the same under a ceiling: the paper's max(100, two snapshot
   * intervals), raised on a jittery link to what its jitter needs (99 % of snapshots' lateness
   * plus two intervals) and on a link losing snapshots in bursts to what a model of its bursts
   * says covers them 99.8 % of the time (AdaptiveDelayConfig.lossCoverage; the delay rises to
   * that at its usual rate without waiting for a gap to outgrow it), but never past the longest
   * delay whose shots the server still compensates (maxUnlagMs less the round trip and a margin). On a clean link remote players are drawn about
   * one interval in the past instead of 100 ms; a link with random loss and no jitter as the
   * paper's fixed delay would, a jittery or bursty one as far back as its gaps need. A positive
   * number is a fixed delay.
   */
  interpolationDelayMs: number | 'adaptive';
  prediction: Partial<PredictionConfig>;
  clock: Partial<ServerClockConfig>;
  view: Partial<RemoteViewConfig>;
  /** The server's view acceptance limits (its lagCompensation settings; the defaults match). */
  viewAcceptance: Partial<ViewAcceptanceLimits>;
}

export const DEFAULT_CLIENT_CONFIG: ClientConfig = {
  protocolId: DEFAULT_PROTOCOL_ID,
  protocolVersion: DEFAULT_PROTOCOL_VERSION,
  updateRate: 32,
  rateBytesPerSecond: 80_000,
  commandRate: 64,
  upRateBytesPerSecond: 2000,
  commandRedundancy: 'bounded',
  connectRetryMs: 100,
  connectTimeoutMs: 10_000,
  timeoutMs: 10_000,
  seed: 1,
  interpolationDelayMs: 0,
  prediction: {},
  clock: {},
  view: {},
  viewAcceptance: {},
};

/** Command packets remembered for redundancy (more than the largest COPY_OFFSETS entry). */
const COPY_RING = 32;
/**
 * Which packets carry a command's copies, counted from the packet that first carried it: the
 * first `copies` of these (consecutive packets: at equal bytes, spreading the copies out did
 * not lose fewer commands to burst loss than resending on loss detected from acknowledgements).
 */
const COPY_OFFSETS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
/**
 * A command not known received is sent again once a command packet sent after its last copy (and
 * the up-link's reordering window after it, below) was acknowledged: the acknowledgements show
 * the copy's packet lost, not overtaken.
 */
const RESEND_AFTER_PACKETS = 1;
/**
 * ...and once that later packet went more than the up-link's measured reordering after it: the
 * most by which an acknowledged packet had been overtaken in the last 4 to 8 s, times
 * REORDER_MARGIN, plus REORDER_FLOOR_MS (`Session.reorderWindowMs`; at most two round-trip
 * deviations). The round trip's deviation alone waited far too long where the link had just
 * turned bad: a latency step inflates it for seconds (197 ms on `flapping`, whose packets are
 * reordered by at most about 2 x 80 ms of jitter), so a command lost at a bad phase's start was
 * noticed a second late and its resend came after the server stopped waiting for it.
 */
const REORDER_MEMORY_MS = 4000;
const REORDER_MARGIN = 1.25;
const REORDER_FLOOR_MS = 20;
/**
 * A command sent again goes in at least this many consecutive packets. Its copies were lost, so
 * the link may have just turned bad: the measured loss (which sets a first send's copies) lags
 * behind, a resend lost again costs another round trip of the worse link, and the server waits
 * for a missing command 1500 ms at most while it hears the client (MAX_REORDER_WINDOW_MS). On a
 * link turning from 40 ms to 400 ms round trip and 20 % loss (the `flapping` profile) single resends left 35 commands a
 * minute in 32 clients to that; four copies, 1. Resends are rare, so the bytes are too.
 */
const MIN_RESEND_COPIES = 4;
/**
 * A command not known received whose last copy went out a probe timeout ago (the round trip and
 * four of its deviations, as QUIC's) is sent again even though no acknowledgement shows it lost,
 * if it is among this many oldest not known received. Acknowledgements ride on snapshots, so a
 * loss burst on the down-link hides a loss on the up-link: on `bursty` the server went on hearing
 * the client while the client heard no acknowledgement for a second, its lost commands were never
 * sent again, and the server gave up on them (a fifth of the lost commands). Only the oldest go:
 * the server runs commands in order and waits for the oldest missing one, and on a link that has
 * only slowed (the `spikes` profile: every packet a second late) sending again every command in
 * flight (tried with a timeout 25 ms longer) filled the packets, the up-link budget spaced them
 * out, and commands the server waited for arrived after it gave up (15 lost, 0 before). 32 is
 * about half a second of commands.
 */
const PROBE_COMMANDS = 32;
/**
 * While the command the server last acknowledged running has not moved for a probe timeout with
 * newer commands sent, the oldest this many not known received go in every packet: the server
 * runs commands in order, so it is waiting for the first of them, and gives up 1500 ms after it
 * found it missing (1000 ms more while it hears nothing from the client). Between the resends
 * above (a few packets in a row, then a probe timeout or an acknowledgement of their loss before
 * the next), a loss burst counted in packets (the `bursty`
 * profile's) took every copy a second and a half long; the packets between the resends now carry
 * them too. Runners on `bursty`, seeds 1 to 24: 65 commands lost and 15 corrections before, 4 and
 * 2 after (with HEAD_RANGES_BYTES_IN_COMMANDS), the up-link within 12 B/s. When nothing stalls it
 * sends nothing more.
 */
export const HEAD_COMMANDS = 8;
/**
 * What the head's copies cost a drought's packet beyond their own bytes, in commands: two more
 * ranges, each about a command's bytes (its gap and the jump of its fields), which the measured
 * bytes per command (of runs mostly in one range) leave out. Without it a whole up-link cut went
 * from 18.2 to 16.4 packets a second (seed 2), and runners on `bursty` lost 24 commands on seeds 1
 * to 24 instead of 4.
 */
const HEAD_RANGES_BYTES_IN_COMMANDS = 2;
/**
 * A command that may fire a hit-scan shot goes in every packet from the one after it was made
 * until one carrying it is acknowledged, in this many at most; where the link loses packets
 * (the measured loss asks for more than one copy of each command) it then goes in every
 * SHOT_TAIL_STRIDE-th packet until SHOT_SPAN_PACKETS after it was made (about a second at 60
 * commands a second). A lost shot is sent again a round trip or more later, and by then the view
 * it names may be past what the server honours (refused: the shooter saw a hit the server judges
 * otherwise). A loss burst (85 % lost, eight packets long on average) took all 16 consecutive
 * copies of about one shot in fourteen sent in it; the sparse tail outlasts nearly every burst.
 * Copies stop at the first acknowledgement, so on a short round trip a shot rides a few packets;
 * shots are a small share of commands, so the bytes are few.
 */
export const SHOT_COPIES = 16;
export const SHOT_SPAN_PACKETS = 64;
export const SHOT_TAIL_STRIDE = 2;
/** Commands whose receipt is remembered (a packet carrying them was acknowledged). */
const RECEIVED_RING = 1024;
/** Ranges of consecutive commands remembered per packet (for acknowledgement); more go unrecorded. */
const MAX_RANGES = 16;
/** Command packets remembered for their acknowledgements (a power of two). */
const PACKET_COMMANDS_RING = 1024;
/** Command packets acknowledged before the measured loss is trusted alone, and the loss assumed at first. */
export const STARTUP_PACKETS = 128;
const STARTUP_LOSS = 0.2;
/** A command is lost (every copy of it) at most this often, were packet losses independent. */
const COMMAND_LOSS_TARGET = 0.0001;
/**
 * Bytes of a command packet besides its commands: the sealed header in its short forms (prefix,
 * sequence, ack, about a byte of ack bits), the tag, the reliable count, flags and run head.
 */
const COMMAND_PACKET_FIXED_BYTES = 5 + PACKET_TAG_BYTES + 4;
/**
 * Command packets per second kept within the up-link budget before copies are cut: the budget
 * pays this many packets' fixed bytes first, and copies share what is left. Half of 60 frames a
 * second: where loss asks for more copies than the budget pays for at one packet a frame, packets
 * carry two new commands at most, not more (the server runs a packet's commands together, and
 * bigger bundles arriving with jitter wait for the time budget).
 */
const MIN_COMMAND_PACKET_RATE = 20;
/**
 * While no acknowledgement comes (a drought, below), a packet carries what the up-link budget
 * pays for at this many packets a second. At 20 the packets carried about 21 commands, the budget
 * spaced them to 10 to 14 a second where the link kept losing, and a loss burst counted in
 * packets lasted that much longer: on the `bursty` profile, with the default delay drawing views
 * 490 ms back and `lateArrivalMs` 1,250, seeds 3, 5 and 6 of 1 to 6 had shots refused past
 * `maxUnlagMs + lateArrivalMs` (2 to 6 rays); at 30, none. At 40 too few of the oldest commands
 * fit beside the newest while the server waits for them (HEAD_COMMANDS).
 */
const DROUGHT_PACKET_RATE = 30;

/**
 * How many consecutive command packets carry each command when the measured up-link packet loss
 * is `loss`: one while no loss is measured (a lost packet's commands are sent again once the
 * acknowledgements show it lost), else enough that every copy is lost at most
 * COMMAND_LOSS_TARGET of the time, plus one for bursts and for loss the measure has not caught
 * up with: 3 at 1 %, 5 at 10 %, 8 at 25 %, never more than 10. The up-link grows with loss, never
 * with the round trip.
 */
export function commandCopies(loss: number): number {
  if (!(loss > 0)) return 1;
  const p = Math.min(loss, 0.6);
  const needed = Math.ceil(Math.log(COMMAND_LOSS_TARGET) / Math.log(p));
  return Math.min(COPY_OFFSETS.length, Math.max(1, needed) + 1);
}

/**
 * The default delay's ceiling is this quantile of how late snapshots arrive (their jitter) plus
 * two intervals (AdaptiveDelayConfig.jitterCoverage).
 */
const DEFAULT_DELAY_JITTER_COVERAGE = 0.99;
/** The default delay covers the link's loss bursts this share of the time (AdaptiveDelay.lossCoverage). */
const DEFAULT_DELAY_LOSS_COVERAGE = 0.998;
/** The default delay stays this far (ms) inside the longest the server compensates. */
const COMPENSABLE_MARGIN_MS = 100;

/** The render time follows the commands' time while within this of the clock's, ms. */
const RENDER_TRACK_MS = 2;

/** No frame for this many snapshot intervals (plus STALL_MARGIN_MS): the link is stalled, at the latest. */
const STALL_INTERVALS = 4;
const STALL_MARGIN_MS = 20;
/**
 * Sooner where the link's gaps between frames are short: no frame for STALL_GAP_FACTOR times the
 * longest gap of the last 5 to 10 s (two halves of STALL_GAP_WINDOW_MS; gaps past the longest
 * wait left out), at least STALL_MIN_INTERVALS snapshot intervals, plus STALL_MARGIN_MS. A
 * latency spike delays the commands sent from its first moment, and the frames that would show
 * it stop arriving only then: every millisecond of waiting is a shot shown as a hit that reaches
 * the server later than the client counted on (within lagCompensation.lateArrivalMs more, still
 * honoured; a longer spike's, refused).
 */
const STALL_GAP_FACTOR = 1.5;
const STALL_MIN_INTERVALS = 2;
const STALL_GAP_WINDOW_MS = 10_000;

/** What the player is doing this frame (the game's input layer fills it). */
export interface InputSample {
  pitch: number;
  yaw: number;
  roll: number;
  forwardMove: number;
  sideMove: number;
  upMove: number;
  buttons: number;
  impulse: number;
}

export function createInputSample(): InputSample {
  return { pitch: 0, yaw: 0, roll: 0, forwardMove: 0, sideMove: 0, upMove: 0, buttons: 0, impulse: 0 };
}

export type ClientState = ConnectionState;

export interface ClientHooks {
  /**
   * An effect event: from the local player's first prediction of a command (`predicted`, and
   * `command` is that command's sequence number, as the server's hooks see it in `cmd.sequence`),
   * or from the server (`command` 0).
   */
  onEvent?(event: WireEvent, predicted: boolean, command: number): void;
  /** A new command was predicted for the first time; `state` is the prediction after it. */
  onPredicted?(cmd: UserCommand, state: unknown): void;
  /** A snapshot was decoded: `client.snapshots` describes the frame of server tick `tick`. */
  onSnapshot?(tick: number): void;
  /** The connection ended; `reason` is a lifecycle reason code, 0 when it timed out. */
  onDisconnect?(reason: number): void;
  /**
   * A reliable game message from the server (`GameServer.sendMessage`), exactly once and in
   * order. Its bytes come from the network: check them. Without this hook the messages stay in
   * the channel, for a game that reads them itself (`client.channel?.receiveReliable()`).
   */
  onMessage?(message: Uint8Array): void;
}

/** A player's resume token on a server (both halves 0: none). See `GameClient.connect`. */
export interface ResumeToken {
  hi: number;
  lo: number;
}

export interface ClientStats {
  commandsSent: number;
  commandPackets: number;
  framesReceived: number;
  /** Frames older than one already applied (reordered): their player state is not used. */
  framesStale: number;
  /** Frames whose header, player state or events failed to decode. */
  framesBad: number;
  eventsReceived: number;
  /** Frames the server reported holding back for this client's rate (choke). */
  choked: number;
  /**
   * Commands whose named view the server will not honour (the view acceptance rule, or a view
   * about to leave the server's history): their shots are judged from the server's estimate, so
   * the client shows none of them hitting a player.
   */
  viewsUncompensated: number;
  /** Commands that could fire a hit-scan shot (the game's `fires`): sent in up to SHOT_COPIES packets. */
  shotCommands: number;
  /** Copies of those sent past SHOT_COPIES, in every SHOT_TAIL_STRIDE-th packet (a lossy link). */
  shotTailCopies: number;
  /** Commands sent again on the probe timeout, no acknowledgement showing them lost (PROBE_COMMANDS). */
  probeResends: number;
  /**
   * Copies of the oldest commands not known received sent while the server's acknowledged
   * command stood still for a probe timeout (HEAD_COMMANDS).
   */
  headResends: number;
}

/** What one command packet carried: its newest command and its ranges of commands. */
interface SentCommands {
  newest: number;
  /** Its number among the session's command packets (0, 1, 2...). */
  count: number;
  sentMs: number;
  entry: number;
  ranges: number;
  /** Where its ranges are in the session's sentLo and sentHi (MAX_RANGES places a packet). */
  readonly at: number;
}

/**
 * Everything one connection to a server knows: the connection, the clock, prediction, the
 * snapshots and the remote view. Connecting again makes a new one, so nothing carries over.
 */
class Session<P, W> {
  readonly connection: ClientConnection;
  readonly predictor: Predictor<P, W>;
  readonly clock: ServerClock;
  readonly snapshots: SnapshotReader;
  /** The player states frames carried: the player part's baselines. */
  readonly players: PlayerStateHistory<P>;
  readonly view: RemoteView;
  adaptiveDelay: AdaptiveDelay | null;
  /** Newest command carried by each sent packet, when it went and its packet history entry, by packet sequence. */
  readonly packetCommands = new SequenceBuffer<SentCommands>(PACKET_COMMANDS_RING, (index) => ({
    // Fractions until sendCommands fills an entry: born with the double fields they end with
    // (createUserCommand says why; `newest` comes from a command's double sequence). Born small
    // integers, sendCommands was deoptimized at its first store into an entry and optimized
    // again hundreds of times a run (node --trace-deopt).
    newest: 0.5,
    count: 0.5,
    sentMs: 0.5,
    entry: 0.5,
    ranges: 0.5,
    at: index * MAX_RANGES,
  }));
  /**
   * The command ranges of the packets in packetCommands, MAX_RANGES places each: two arrays for
   * the whole ring where two per packet made a session's 2,048 typed arrays.
   */
  readonly sentLo = new Float64Array(PACKET_COMMANDS_RING * MAX_RANGES);
  readonly sentHi = new Float64Array(PACKET_COMMANDS_RING * MAX_RANGES);
  /** Commands known received by the server (a packet carrying them was acknowledged), by number. */
  readonly received = new Float64Array(RECEIVED_RING).fill(-1);
  /** The command packet (by count) each command last went out in (sentSeq tags the slot). */
  readonly sentSeq = new Float64Array(RECEIVED_RING).fill(-1);
  readonly sentInPacket = new Float64Array(RECEIVED_RING);
  readonly sentAtMs = new Float64Array(RECEIVED_RING);
  /**
   * A command sent again (every copy lost) goes in every packet up to this one (by count), as
   * many as a first send's copies and at least MIN_RESEND_COPIES: one copy a time lets a loss
   * burst swallow each resend. A shot goes so from the packet after it was made (SHOT_COPIES).
   */
  readonly resendUntil = new Float64Array(RECEIVED_RING).fill(-1);
  /** A shot's sparse copies go up to this packet (by count): SHOT_SPAN_PACKETS, SHOT_TAIL_STRIDE. */
  readonly shotTailUntil = new Float64Array(RECEIVED_RING).fill(-1);
  /** Newest command the server is known to have received (its packet was acknowledged). */
  serverHasCommand = 0;
  /** Newest command packet acknowledged, by count (-1: none), and when it went (local ms). */
  newestAckedPacket = -1;
  newestAckedSentMs = 0;
  /** The command the server last acknowledged running, as last seen, and since when (local ms): HEAD_COMMANDS. */
  headDone = -1;
  headSinceMs = 0;
  /**
   * How far the up-link reorders command packets: the most by which a packet acknowledged after
   * a later-sent one was acknowledged had been sent before it (ms), in the current and the
   * previous REORDER_MEMORY_MS (see `reorderWindowMs`), and when the current one began.
   */
  reorderNowMs = 0;
  reorderBeforeMs = 0;
  reorderSinceMs = Number.NEGATIVE_INFINITY;
  /** Newest command of each of the last COPY_RING command packets, by command packet count. */
  readonly sentNewest = new Float64Array(COPY_RING);
  commandPackets = 0;
  /** Newest server tick received. */
  serverTick = 0;
  spawned = false;
  lastFrameMs = -1;
  msecRemainder = 0;
  /** The interpolation delay the view was last drawn with, ms. */
  viewDelayMs = 0;
  /** The render time last drawn (ms) and the newest command then (-1: none). */
  renderTimeMs = 0;
  renderCommand = -1;
  /** Local time the newest frame arrived, ms. */
  newestFrameAtMs = 0;
  /**
   * Longest gap between newest frames (those past the longest stall wait left out) in the current
   * half of STALL_GAP_WINDOW_MS and the half before, ms; when the current half began.
   */
  frameGapMax = 0;
  frameGapMaxBefore = 0;
  frameGapSinceMs = 0;
  nextCommandSendMs = 0;
  /** The up-link budget allows the next command packet from this time on. */
  upFreeMs = 0;
  /** Filtered bytes each command costs in a packet, and filtered msec per command. */
  bytesPerCommand = 3;
  msecPerCommand = 16;

  constructor(client: GameClient<P, W>, connection: ClientConnection) {
    const { game, config } = client;
    this.connection = connection;
    this.predictor = new Predictor(game.player, client.world, config.prediction);
    this.clock = new ServerClock(config.clock);
    this.snapshots = new SnapshotReader(game.entities);
    this.players = new PlayerStateHistory(game.player.serialize, game.entities.frameHistory);
    this.view = new RemoteView(game.entities, this.snapshots, config.view);
    this.adaptiveDelay = adaptiveDelayFor(config);
  }

  /** A command packet acknowledged after one sent `byMs` later was: the up-link reorders so far. */
  noteReorder(nowMs: number, byMs: number): void {
    this.rollReorder(nowMs);
    if (byMs > this.reorderNowMs) this.reorderNowMs = byMs;
  }

  /**
   * How long after a command packet one sent later must have gone, acknowledged, before the
   * first is taken as lost rather than overtaken: REORDER_MARGIN times the most reordering seen
   * in the last REORDER_MEMORY_MS to 2 x REORDER_MEMORY_MS, plus REORDER_FLOOR_MS, at most
   * `ceilingMs` (two round-trip deviations: the rule before reordering was measured).
   */
  reorderWindowMs(nowMs: number, ceilingMs: number): number {
    this.rollReorder(nowMs);
    const seen = Math.max(this.reorderNowMs, this.reorderBeforeMs);
    return Math.min(ceilingMs, REORDER_FLOOR_MS + REORDER_MARGIN * seen);
  }

  private rollReorder(nowMs: number): void {
    if (nowMs - this.reorderSinceMs < REORDER_MEMORY_MS) return;
    this.reorderBeforeMs = nowMs - this.reorderSinceMs < 2 * REORDER_MEMORY_MS ? this.reorderNowMs : 0;
    this.reorderNowMs = 0;
    this.reorderSinceMs = nowMs;
  }
}

/** A game client: connection, command stream, prediction and clock for one local player. */
export class GameClient<P, W> {
  readonly config: ClientConfig;
  readonly game: GameDefinition<P, W>;
  readonly world: W;
  readonly stats: ClientStats = {
    commandsSent: 0,
    commandPackets: 0,
    framesReceived: 0,
    framesStale: 0,
    framesBad: 0,
    eventsReceived: 0,
    choked: 0,
    viewsUncompensated: 0,
    shotCommands: 0,
    shotTailCopies: 0,
    probeResends: 0,
    headResends: 0,
  };
  /** Recent packets each way: sizes and round trips (net_graph). */
  readonly packets = new PacketHistory(512);
  /**
   * False: remote entities are drawn at the newest snapshot received, stepping from one to the
   * next (interpolation off), and commands name that view.
   */
  interpolate = true;
  /** The view acceptance limits this client assumes the server applies. */
  readonly viewLimits: Readonly<ViewAcceptanceLimits>;
  /**
   * Whether the newest command's named view will be honoured by the server (false: its shots are
   * judged from the server's estimate and the client showed none of them hitting a player).
   */
  lastViewHonoured = false;

  private readonly endpoint: DatagramEndpoint;
  private readonly serverAddress: string;
  private readonly hooks: ClientHooks;
  private readonly random: Random;
  private readonly schemaHash: number;
  private session: Session<P, W>;
  private readonly cmd: UserCommand = createUserCommand();
  private readonly sendCmds: UserCommand[] = [];
  private readonly run: CommandRun = { count: 0, baseGap: 0, shortFirst: false };
  private readonly lookupCommand = (sequence: number) => this.session.predictor.command(sequence);
  /** The ranges of commands the packet being written carries, and its newest command so far. */
  private ranges = 0;
  private rangeOpen = false;
  private lastWritten = 0;
  /** Most commands the packet being written may carry (writeCommandRun; MAX_COMMANDS_PER_PACKET unbounded). */
  private runLimit = MAX_COMMANDS_PER_PACKET;
  private readonly rangeLo = new Float64Array(MAX_RANGES);
  private readonly rangeHi = new Float64Array(MAX_RANGES);
  private readonly flags: ClientFlags = createClientFlags();
  /** Entities the next command's shots are tested against (the remote players drawn). */
  private readonly targets: Int32Array;
  private readonly frame: ServerFrame<P>;
  private readonly frameCodec: ServerFrameCodec<P>;
  private readonly event = createWireEvent();
  private nowMs = 0;
  private readonly onPacket = (from: string, data: Uint8Array) => this.session.connection.receive(from, data);
  private readonly writeCommands = (s: BitStream) => this.writeCommandRun(s);
  private readonly localEvents: GameEventSink;
  private readonly resume: ResumeToken = { hi: 0, lo: 0 };

  constructor(
    game: GameDefinition<P, W>,
    endpoint: DatagramEndpoint,
    serverAddress: string,
    config: Partial<ClientConfig> = {},
    hooks: ClientHooks = {},
  ) {
    this.config = { ...DEFAULT_CLIENT_CONFIG, ...config };
    validateClientConfig(this.config);
    this.viewLimits = Object.freeze({ ...DEFAULT_VIEW_ACCEPTANCE_LIMITS, ...this.config.viewAcceptance });
    checkViewAcceptanceLimits(this.viewLimits, 'client config: viewAcceptance');
    this.game = game;
    this.endpoint = endpoint;
    this.serverAddress = serverAddress;
    this.hooks = hooks;
    this.world = game.createWorld();
    this.random = new Random(this.config.seed);
    this.schemaHash = gameSchemaHash(game);
    if (game.events !== undefined) checkEventTable(game.events);
    this.session = this.newSession(0);
    this.session.connection.disconnect();
    this.cmd.randomSeed = this.random.nextU32();
    this.targets = new Int32Array(game.entities.maxEntities);
    this.frame = createServerFrame(game.player.create());
    const players = () => this.session.players;
    this.frameCodec = {
      get players() {
        return players();
      },
      events: game.events ?? null,
      serializeSnapshot: (s, tick, hint) => this.session.snapshots.read(s, tick, hint),
    };
    for (let i = 0; i < MAX_COMMANDS_PER_PACKET; i++) this.sendCmds.push(createUserCommand());
    const event = this.event;
    this.localEvents = {
      emit: (type, p0, p1, p2, p3) => {
        event.type = type;
        event.source = this.slot;
        event.p0 = p0;
        event.p1 = p1;
        event.p2 = p2;
        event.p3 = p3;
        this.hooks.onEvent?.(event, true, this.cmd.sequence);
      },
    };
  }

  get state(): ClientState {
    return this.session.connection.state;
  }

  /** Slot the server gave this client (-1 until connected). */
  get slot(): number {
    return this.session.connection.slot;
  }

  get tickRate(): number {
    return this.session.connection.tickRate;
  }

  /** The local time of the last `update` (what the view was last drawn for), -1 before any. */
  get lastUpdateMs(): number {
    return this.session.lastFrameMs;
  }

  /** Lifecycle reason the connection ended with (refused or disconnected). */
  get endReason(): number {
    return this.session.connection.endReason;
  }

  get channel(): ClientConnection['channel'] {
    return this.session.connection.channel;
  }

  /** Newest server tick received. */
  get serverTick(): number {
    return this.session.serverTick;
  }

  get predictor(): Predictor<P, W> {
    return this.session.predictor;
  }

  get clock(): ServerClock {
    return this.session.clock;
  }

  /** Decoded snapshots. */
  get snapshots(): SnapshotReader {
    return this.session.snapshots;
  }

  /** Remote entities as drawn this frame. */
  get view(): RemoteView {
    return this.session.view;
  }

  /**
   * Starts connecting; `update` carries the handshake on. A new session (connection, nonce,
   * prediction, snapshots, view, clock) is made; only the player's resume token carries over:
   * a server with a reconnection grace period (`ServerConfig.reconnectGraceMs`) that still holds
   * the player gives back its slot and state. Pass `resumeToken` to use another (one saved from
   * `resumeToken` before a page reload, say), or `null` to join as a new player.
   */
  connect(nowMs: number, resumeToken: ResumeToken | null = this.resume): void {
    this.nowMs = Math.max(this.nowMs, nowMs);
    this.resume.hi = resumeToken === null ? 0 : resumeToken.hi >>> 0;
    this.resume.lo = resumeToken === null ? 0 : resumeToken.lo >>> 0;
    this.session = this.newSession(nowMs);
  }

  /** The resume token of the player this client has (or last had) on the server (a copy). */
  get resumeToken(): ResumeToken {
    return { hi: this.resume.hi, lo: this.resume.lo };
  }

  /**
   * Queues a reliable game message for the server (1 to 1024 bytes): delivered exactly once and
   * in order, to `ServerHooks.onMessage`. Returns false when not connected or when the window of
   * unacknowledged messages is full: send it later.
   */
  sendMessage(message: Uint8Array): boolean {
    const channel = this.session.connection.channel;
    if (this.session.connection.state !== 'connected' || channel === null) return false;
    return channel.sendReliable(message);
  }

  /** Tells the server this client is leaving (three copies) and stops. */
  disconnect(): void {
    this.session.connection.disconnect();
  }

  /** The interpolation delay in use now, ms (0 while interpolation is off). */
  interpolationDelayMs(nowMs: number): number {
    if (!this.interpolate) return 0;
    const adaptive = this.session.adaptiveDelay;
    if (adaptive !== null) return adaptive.delayMs(nowMs);
    // No adaptive delay: the configured one is fixed (0 and 'adaptive' always make one).
    const d = this.config.interpolationDelayMs;
    return typeof d === 'number' ? d : defaultInterpolationDelayMs(this.config.updateRate);
  }

  /**
   * How long after the newest server time received a command made now reaches the server and
   * runs, as the client counts on it (viewHonoured): the round trip, two ticks and two snapshot
   * intervals, ms.
   */
  private arrivalLeadMs(rttMs: number, tickMs: number): number {
    return rttMs + 2 * tickMs + (2 * 1000) / this.config.updateRate;
  }

  /**
   * The longest default delay whose shots the server still compensates when they arrive:
   * `maxUnlagMs` less the arrival lead (arrivalLeadMs), a snapshot interval for the view's frame
   * A, and COMPENSABLE_MARGIN_MS for the round trip's wander. The default delay's ceiling is held
   * under it (never under the paper's delay): a slow link's long delay would leave its shots
   * uncompensated.
   */
  private compensableDelayMs(rttMs: number, tickMs: number): number {
    const intervalMs = 1000 / this.config.updateRate;
    return (
      this.viewLimits.maxUnlagMs - this.arrivalLeadMs(rttMs, tickMs) - intervalMs - COMPENSABLE_MARGIN_MS
    );
  }

  /**
   * Changes the interpolation delay from now on: a number of ms (0: the default), or 'adaptive'.
   * Throws a RangeError as the constructor does for a bad value.
   */
  setInterpolationDelay(delay: number | 'adaptive'): void {
    const next = { ...this.config, interpolationDelayMs: delay };
    validateClientConfig(next);
    this.config.interpolationDelayMs = delay;
    this.session.adaptiveDelay = adaptiveDelayFor(this.config);
  }

  /**
   * The snapshot rate this client's delay is computed for (the server must be told separately:
   * the rate asked at connect is in the handshake). Throws a RangeError for a bad rate.
   */
  setUpdateRate(updateRate: number): void {
    const next = { ...this.config, updateRate };
    validateClientConfig(next);
    this.config.updateRate = updateRate;
    this.session.adaptiveDelay = adaptiveDelayFor(this.config);
  }

  /** Longest remote entities are extrapolated past the newest snapshot, ms (then held). */
  setMaxExtrapolationMs(ms: number): void {
    if (!(ms >= 0 && ms <= 1000)) {
      throw new RangeError(`client: maxExtrapolationMs must be a number in 0..1000, got ${String(ms)}`);
    }
    this.config.view = { ...this.config.view, maxExtrapolationMs: ms };
    this.session.view.config.maxExtrapolationMs = ms;
  }

  /** True once the server has given this client its player. */
  get isSpawned(): boolean {
    return this.session.spawned;
  }

  /**
   * One client frame at `nowMs`: with `input`, makes this frame's command (its msec is the
   * frame's time), predicts it and sends it with every unacknowledged one; reads packets;
   * replays prediction from the newest acknowledged state.
   */
  update(nowMs: number, input: InputSample | null): void {
    if (nowMs < this.nowMs) nowMs = this.nowMs;
    this.nowMs = nowMs;
    const session = this.session;
    const connection = session.connection;
    const frameMs = session.lastFrameMs < 0 ? 0 : nowMs - session.lastFrameMs;
    session.lastFrameMs = nowMs;
    if (connection.state === 'connecting' || connection.state === 'challenged') connection.update(nowMs);
    if (connection.state === 'connected' && session.spawned && input !== null) {
      this.makeCommand(frameMs, input);
      if (
        nowMs >= session.nextCommandSendMs &&
        nowMs >= session.upFreeMs &&
        session.predictor.newestSequence > session.serverHasCommand
      ) {
        this.sendCommands(nowMs);
      }
    }
    connection.advance(nowMs);
    this.endpoint.poll(nowMs, this.onPacket);
    if (connection.state === 'connected') {
      connection.update(nowMs);
      if (connection.state !== 'connected') return;
      const channel = connection.channel;
      if (channel !== null && this.hooks.onMessage !== undefined) {
        for (let m = channel.receiveReliable(); m !== null; m = channel.receiveReliable())
          this.hooks.onMessage(m);
      }
    }
    session.predictor.predict(nowMs);
    const tickRate = connection.tickRate;
    if (tickRate > 0 && session.clock.synced) {
      const tickMs = 1000 / tickRate;
      const delay = this.interpolationDelayMs(nowMs);
      let renderTimeMs = this.interpolate
        ? this.trackRenderTime(session.clock.receivedNow(nowMs) - delay)
        : session.view.newestTick * tickMs;
      // Never further behind the newest frame than the delay (and half the rule's slack): the
      // view acceptance rule honours no older view. The smoothed clock lags the newest frame
      // only while it catches up after the latency fell.
      const newest = session.view.newestTick;
      const floor = newest * tickMs - delay - this.viewLimits.viewSlackMs / 2;
      if (newest >= 0 && renderTimeMs < floor) renderTimeMs = floor;
      session.viewDelayMs = delay;
      session.view.update(renderTimeMs / tickMs, tickMs);
    }
  }

  /**
   * The render time this frame, near `targetMs` (the clock's): while commands are made, the view
   * moves on by exactly the msec of the command made this frame and follows the clock only as far as it strays
   * more than RENDER_TRACK_MS from it. So the view a command names is, almost always, its
   * predecessor's moved on by that one's msec, which the command packets encode in a bit or two
   * (serializeCompactUserCommand); the view stays within RENDER_TRACK_MS of the clock's.
   */
  private trackRenderTime(targetMs: number): number {
    const session = this.session;
    let t = targetMs;
    if (session.renderCommand >= 0) {
      const moved = session.predictor.newestSequence - session.renderCommand;
      const made = moved === 1 ? session.predictor.command(session.renderCommand + 1) : undefined;
      if (made !== undefined) {
        const next = session.renderTimeMs + made.msec;
        t = Math.min(targetMs + RENDER_TRACK_MS, Math.max(targetMs - RENDER_TRACK_MS, next));
      }
    }
    session.renderCommand = session.predictor.newestSequence;
    session.renderTimeMs = t;
    return t;
  }

  private newSession(nowMs: number): Session<P, W> {
    const c = this.config;
    const connection = new ClientConnection(
      this.endpoint,
      this.serverAddress,
      {
        protocolId: c.protocolId,
        protocolVersion: c.protocolVersion,
        schemaHash: this.schemaHash,
        updateRate: c.updateRate,
        rateBytesPerSecond: c.rateBytesPerSecond,
        connectRetryMs: c.connectRetryMs,
        connectTimeoutMs: c.connectTimeoutMs,
        timeoutMs: c.timeoutMs,
        resumeHi: this.resume.hi,
        resumeLo: this.resume.lo,
        serverPublicKey: c.serverPublicKey,
        connectToken: c.connectToken,
        packetCipher: c.packetCipher,
      },
      this.random.nextU32(),
      nowMs,
      {
        connected: () => this.onConnected(),
        payload: (s) => this.receiveFrame(s),
        ended: (_state, reason) => this.hooks.onDisconnect?.(reason),
      },
    );
    return new Session(this, connection);
  }

  private onConnected(): void {
    const session = this.session;
    const channel = session.connection.channel;
    if (channel === null) return;
    this.resume.hi = session.connection.resumeToken.hi;
    this.resume.lo = session.connection.resumeToken.lo;
    channel.onAck = (sequence) => {
      const sent = session.packetCommands.get(sequence);
      if (sent === undefined) return;
      if (sent.newest > session.serverHasCommand) session.serverHasCommand = sent.newest;
      if (sent.count < session.newestAckedPacket) {
        // Overtaken on the up-link by a packet sent this much later.
        session.noteReorder(this.nowMs, session.newestAckedSentMs - sent.sentMs);
      }
      if (sent.count > session.newestAckedPacket) {
        session.newestAckedPacket = sent.count;
        session.newestAckedSentMs = sent.sentMs;
      }
      for (let r = 0; r < sent.ranges; r++) {
        const hi = session.sentHi[sent.at + r];
        for (let seq = session.sentLo[sent.at + r]; seq <= hi; seq++)
          session.received[seq % RECEIVED_RING] = seq;
      }
      this.packets.acknowledged(sent.entry, this.nowMs - sent.sentMs);
    };
  }

  private makeCommand(frameMs: number, input: InputSample): void {
    const session = this.session;
    // Commands carry whole milliseconds; the fraction is carried to the next frame so the sum
    // of msec follows real time.
    session.msecRemainder += frameMs;
    let msec = Math.floor(session.msecRemainder);
    if (msec < 1) return;
    if (msec > CMD_MSEC_MAX) msec = CMD_MSEC_MAX;
    session.msecRemainder -= Math.floor(session.msecRemainder);
    session.msecPerCommand += (msec - session.msecPerCommand) / 16;
    const predictor = session.predictor;
    const view = session.view;
    const c = this.cmd;
    c.sequence = predictor.newestSequence + 1;
    c.msec = msec;
    c.pitch = input.pitch;
    c.yaw = input.yaw;
    c.roll = input.roll;
    c.forwardMove = input.forwardMove;
    c.sideMove = input.sideMove;
    c.upMove = input.upMove;
    c.buttons = input.buttons;
    c.impulse = input.impulse;
    c.randomSeed = nextRandomSeed(c.randomSeed);
    // The view the player was looking at when they made this command: last frame's.
    c.lerpMsec = Math.round(session.viewDelayMs);
    c.viewTickA = view.tickA;
    c.viewTickB = view.tickB;
    c.viewFraction = view.fraction;
    c.viewNewest = Math.max(0, view.newestTick);
    quantizeUserCommand(c);
    this.lastViewHonoured = this.viewHonoured(c);
    if (!this.lastViewHonoured) this.stats.viewsUncompensated++;
    // Its first prediction is the client's verdict on any shot: against the players as drawn,
    // or against none when the server will not honour the view (it judges from its estimate).
    const hitscan = this.game.hitscan;
    // Only a command that may fire needs the targets (the game's `fires` never says false when
    // a shot comes): most commands, with the weapon busy or no attack held, copy none.
    if (hitscan?.fires(predictor.current, c)) {
      // It rides in the next SHOT_COPIES packets (as a resend does), then in every
      // SHOT_TAIL_STRIDE-th up to SHOT_SPAN_PACKETS, until acknowledged.
      if (this.config.commandRedundancy === 'bounded') {
        const slot = c.sequence % RECEIVED_RING;
        session.resendUntil[slot] = session.commandPackets + SHOT_COPIES - 1;
        session.shotTailUntil[slot] = session.commandPackets + SHOT_SPAN_PACKETS - 1;
      }
      this.stats.shotCommands++;
      let count = 0;
      for (let k = 0; this.lastViewHonoured && k < view.count; k++) {
        const e = view.list[k];
        if (view.types[e] === hitscan.targetType) this.targets[count++] = e;
      }
      hitscan.setTargets(this.world, -1, count, this.targets, view.values, view.stride);
      predictor.addCommand(c, this.localEvents);
      hitscan.setTargets(this.world, -1, 0, this.targets, view.values, view.stride);
    } else {
      predictor.addCommand(c, this.localEvents);
    }
    this.hooks.onPredicted?.(c, predictor.current);
  }

  /**
   * Whether the server will honour `cmd`'s named view: the view acceptance rule (the server runs
   * the same function), and frame A no more than maxUnlagMs old in server time when the command
   * arrives (estimated from the clock and the round trip, with a margin of two snapshot intervals;
   * the server honours lagCompensation.lateArrivalMs more, for a delay the link adds after the
   * command was sent, which this estimate cannot see). While no frame has arrived for
   * longer than the link's gaps explain (stallAfterMs) the link is taken to be stalled both ways
   * (a latency spike delays the command as much as the frames), and no view is counted on.
   */
  private viewHonoured(cmd: UserCommand): boolean {
    const session = this.session;
    const tickRate = session.connection.tickRate;
    if (!(tickRate > 0) || judgeView(cmd, 1000 / tickRate, this.viewLimits) !== VIEW_HONOURED) return false;
    if (this.nowMs - session.newestFrameAtMs > this.stallAfterMs()) return false;
    const rtt = session.connection.channel?.stats.rttMs ?? 0;
    const tickMs = 1000 / tickRate;
    const arrivalMs = session.clock.receivedNow(this.nowMs) + this.arrivalLeadMs(rtt, tickMs);
    return cmd.viewTickA * tickMs >= arrivalMs - this.viewLimits.maxUnlagMs;
  }

  /** The longest the client waits for a frame before taking the link to be stalled, ms. */
  private longestStallMs(): number {
    return (STALL_INTERVALS * 1000) / this.config.updateRate + STALL_MARGIN_MS;
  }

  /** How long without a new frame the link is taken to be stalled, ms (STALL_GAP_FACTOR). */
  private stallAfterMs(): number {
    const session = this.session;
    const intervalMs = 1000 / this.config.updateRate;
    const longest = this.longestStallMs();
    const gaps = Math.max(session.frameGapMax, session.frameGapMaxBefore);
    if (!(gaps > 0)) return longest;
    const fit = Math.max(STALL_MIN_INTERVALS * intervalMs, STALL_GAP_FACTOR * gaps) + STALL_MARGIN_MS;
    return Math.min(fit, longest);
  }

  private sendCommands(nowMs: number): void {
    const session = this.session;
    const channel = session.connection.channel;
    if (channel === null) return;
    const before = channel.stats.bytesSent;
    const sequence = channel.send(nowMs, this.writeCommands);
    const sent = session.packetCommands.insert(sequence);
    sent.newest = session.predictor.newestSequence;
    sent.count = session.commandPackets;
    sent.sentMs = nowMs;
    sent.ranges = this.ranges;
    for (let r = 0; r < this.ranges; r++) {
      session.sentLo[sent.at + r] = this.rangeLo[r];
      session.sentHi[sent.at + r] = this.rangeHi[r];
    }
    const bytes = channel.stats.bytesSent - before;
    if (this.run.count > 0) {
      const perCommand = Math.max(1, (bytes - COMMAND_PACKET_FIXED_BYTES) / this.run.count);
      session.bytesPerCommand += (perCommand - session.bytesPerCommand) / 64;
    }
    sent.entry = this.packets.record(nowMs, PACKET_OUT, bytes);
    // The budget is a bucket holding at most one interval's worth: a packet spends its bytes.
    const budgetMs = (bytes * 1000) / this.config.upRateBytesPerSecond;
    session.upFreeMs = Math.max(session.upFreeMs, nowMs - 1000 / this.config.commandRate) + budgetMs;
    session.sentNewest[session.commandPackets % COPY_RING] = sent.newest;
    session.commandPackets++;
    this.stats.commandPackets++;
    const interval = 1000 / this.config.commandRate;
    session.nextCommandSendMs = Math.max(session.nextCommandSendMs + interval, nowMs - interval);
  }

  /**
   * How many packets carry each command: as many as the measured up-link loss needs
   * (`commandCopies`), but no more than the up-link budget affords while still sending
   * MIN_COMMAND_PACKET_RATE packets a second (past that, more copies would only space the packets
   * out and delay every command).
   */
  private copiesNow(): number {
    const session = this.session;
    const stats = session.connection.channel?.stats;
    // Until enough packets were acknowledged to measure the loss, it is taken to be at least
    // STARTUP_LOSS, less as acknowledgements come in.
    let loss = stats?.outgoingLoss ?? 0;
    const acked = stats?.packetsAcked ?? 0;
    if (acked < STARTUP_PACKETS) loss = Math.max(loss, (STARTUP_LOSS * 8) / (8 + acked));
    const wanted = commandCopies(loss);
    const commandsPerSecond = 1000 / Math.max(1, session.msecPerCommand);
    const spare = this.config.upRateBytesPerSecond - MIN_COMMAND_PACKET_RATE * COMMAND_PACKET_FIXED_BYTES;
    const affordable = Math.floor(spare / (commandsPerSecond * session.bytesPerCommand));
    return Math.max(1, Math.min(wanted, affordable, COPY_OFFSETS.length));
  }

  /**
   * The commands of this packet, oldest first: any the server is not known to have whose last
   * copy's packet the acknowledgements show lost (RESEND_AFTER_PACKETS later packets
   * acknowledged: sent again, and again if that copy is lost too), then the new ones with copies
   * of the ones first sent COPY_OFFSETS[1..copies) packets ago the server is not known to have
   * (no packet carrying them acknowledged, not yet run), and any a full packet left out before.
   * At most a packet's worth: the oldest and the newest command are kept (the server runs them in
   * order, and dates the packet by its newest). The server waits a reorder window for a missing
   * command before skipping it.
   */
  private writeCommandRun(s: BitStream): void {
    const session = this.session;
    const predictor = session.predictor;
    const newest = predictor.newestSequence;
    const done = predictor.ackedSequence;
    const k = session.commandPackets;
    const bounded = this.config.commandRedundancy === 'bounded';
    const copies = bounded ? this.copiesNow() : 1;
    this.run.count = 0;
    this.lastWritten = done;
    // While no acknowledgement has come for a probe timeout (a loss burst on the up-link leaves
    // the server nothing to acknowledge), at most what the up-link budget pays for at
    // DROUGHT_PACKET_RATE packets a second: every command not known received was being sent
    // again and the packets grew with them, until at 2 KB/s their size spaced them out to 10 a
    // second and fewer; a burst counted in lost packets then lasted that much longer in time, and
    // the server heard nothing for up to 2.7 s (past the 128 commands it then queued: the rest
    // skipped as lost). Full, a packet keeps the oldest and the newest (addToRun), and the others
    // go in the packets after it. Not while acknowledgements come: on a link losing a quarter of
    // its packets at random, packets held to that size left copies out and lost commands.
    // The probe timeout: the round trip and four of its deviations (as QUIC's); none (Infinity)
    // before a round trip is measured.
    const link = session.connection.channel?.stats;
    const probeTimeoutMs =
      link !== undefined && link.rttMs > 0 ? link.rttMs + 4 * link.rttVarianceMs : Number.POSITIVE_INFINITY;
    const drought = this.nowMs - session.newestAckedSentMs > probeTimeoutMs;
    // The server's acknowledged command standing still a probe timeout with newer ones sent: the
    // oldest not known received go in every packet (HEAD_COMMANDS).
    if (done !== session.headDone) {
      session.headDone = done;
      session.headSinceMs = this.nowMs;
    }
    const headStalled = bounded && newest > done && this.nowMs - session.headSinceMs >= probeTimeoutMs;
    // The head's copies open a range of their own before the rest: two more ranges, each about a
    // command's bytes (its first command's gap and the jump of its fields), which the measured
    // bytes per command (of runs mostly in one range) leave out.
    this.runLimit =
      bounded && drought
        ? Math.max(
            2,
            Math.min(
              MAX_COMMANDS_PER_PACKET,
              Math.floor(
                (this.config.upRateBytesPerSecond / DROUGHT_PACKET_RATE - COMMAND_PACKET_FIXED_BYTES) /
                  session.bytesPerCommand,
              ),
            ) - (headStalled ? HEAD_RANGES_BYTES_IN_COMMANDS : 0),
          )
        : MAX_COMMANDS_PER_PACKET;
    this.ranges = 0;
    this.rangeOpen = false;
    // Where the copies begin: after the newest command of the packet before the oldest copied.
    const oldestBack = Math.min(COPY_OFFSETS[copies - 1], k);
    let copiesFrom =
      !bounded || oldestBack === k ? done + 1 : session.sentNewest[(k - oldestBack - 1) % COPY_RING] + 1;
    if (bounded) {
      // Copies of at most `copies` packets' worth of commands at MIN_COMMAND_PACKET_RATE: packets
      // the up-link budget holds back must not carry more copies each, or they grow, are held
      // back longer and grow again (a command left out is sent again if its copies were lost).
      // Commands never sent yet are never left out.
      const perPacket = Math.ceil(1000 / Math.max(1, session.msecPerCommand) / MIN_COMMAND_PACKET_RATE);
      const unsent = k === 0 ? done + 1 : session.sentNewest[(k - 1) % COPY_RING] + 1;
      copiesFrom = Math.max(copiesFrom, Math.min(newest - copies * perPacket + 1, unsent));
    }
    // A copy's packet is taken as lost once packets sent RESEND_AFTER_PACKETS and the reordering
    // window after it were acknowledged (not merely overtaken on a jittery route).
    const lostBefore = session.newestAckedPacket - RESEND_AFTER_PACKETS;
    const lostSentBefore =
      session.newestAckedSentMs - session.reorderWindowMs(this.nowMs, 2 * (link?.rttVarianceMs ?? 0));
    // A copy sent a probe timeout ago, with no acknowledgement of it since, may be lost where the
    // acknowledgements cannot say (PROBE_COMMANDS).
    const probeSentBefore = this.nowMs - probeTimeoutMs;
    const lowest = Math.max(done + 1, copiesFrom - MAX_COMMAND_SKIP);
    for (let seq = lowest; seq < copiesFrom; seq++) {
      const i = seq % RECEIVED_RING;
      if (session.received[i] === seq) {
        this.closeRange();
        continue;
      }
      if (session.sentSeq[i] !== seq) {
        // Never sent: a full packet left it for a later one (addToRun).
        this.addToRun(seq);
        continue;
      }
      const shownLost = session.sentInPacket[i] <= lostBefore && session.sentAtMs[i] <= lostSentBefore;
      if (shownLost || (session.sentAtMs[i] <= probeSentBefore && seq <= done + PROBE_COMMANDS)) {
        // Every copy lost (or unacknowledged past the probe timeout): sent again, in as many
        // packets as a first send and at least MIN_RESEND_COPIES.
        if (!shownLost) this.stats.probeResends++;
        session.resendUntil[i] = k + Math.max(copies, MIN_RESEND_COPIES) - 1;
        this.addToRun(seq);
      } else if (session.resendUntil[i] >= k) this.addToRun(seq);
      else if (headStalled && seq <= done + HEAD_COMMANDS) {
        this.stats.headResends++;
        this.addToRun(seq);
      } else if (
        copies > 1 &&
        session.shotTailUntil[i] >= k &&
        (session.shotTailUntil[i] - k) % SHOT_TAIL_STRIDE === 0
      ) {
        this.stats.shotTailCopies++;
        this.addToRun(seq);
      } else this.closeRange();
    }
    for (let j = copies - 1; j >= 0; j--) {
      const back = COPY_OFFSETS[j];
      if (back > k) continue;
      // The commands packet k - back carried first: after the newest of the packet before it
      // (every command not known received, when not bounded).
      const lo = !bounded
        ? Math.max(done + 1, newest - MAX_COMMANDS_PER_PACKET + 1)
        : back === k
          ? done + 1
          : session.sentNewest[(k - back - 1) % COPY_RING] + 1;
      const hi = back === 0 ? newest : session.sentNewest[(k - back) % COPY_RING];
      for (let seq = Math.max(lo, this.lastWritten + 1); seq <= hi; seq++) {
        if (session.received[seq % RECEIVED_RING] === seq) this.closeRange();
        else this.addToRun(seq);
      }
    }
    const count = this.run.count;
    for (let i = 0; i < count; i++) {
      const seq = this.sendCmds[i].sequence;
      session.sentSeq[seq % RECEIVED_RING] = seq;
      session.sentInPacket[seq % RECEIVED_RING] = k;
      session.sentAtMs[seq % RECEIVED_RING] = this.nowMs;
    }
    // The first command is encoded against the newest one before it the server is known to
    // have received, when the client still holds it.
    this.run.baseGap = 0;
    if (count > 0) {
      const first = this.sendCmds[0].sequence;
      const stop = Math.max(1, first - MAX_COMMAND_BASE_GAP);
      for (let b = first - 1; b >= stop; b--) {
        if (session.received[b % RECEIVED_RING] === b && predictor.command(b) !== undefined) {
          this.run.baseGap = first - b;
          break;
        }
      }
    }
    // The server reads a short first number near the newest command it received: at least the
    // newest known received, at most the newest made.
    this.run.shortFirst =
      count > 0 &&
      this.sendCmds[0].sequence - session.serverHasCommand <= FIRST_SEQUENCE_SHORT_REACH &&
      newest - this.sendCmds[0].sequence <= FIRST_SEQUENCE_SHORT_REACH;
    this.flags.resetBaseline = session.snapshots.needsFullUpdate || session.players.needsFullUpdate;
    session.connection.pairs.take(this.flags);
    serializeClientFlags(s, this.flags);
    const tickRate = session.connection.tickRate;
    serializeCommandRun(
      s,
      this.sendCmds,
      this.run,
      this.lookupCommand,
      0,
      tickRate > 0 ? 1000 / tickRate : 0,
    );
    this.stats.commandsSent += count;
  }

  /** Ends the current range of the packet being written (the next command starts a new one). */
  private closeRange(): void {
    this.rangeOpen = false;
  }

  /**
   * Appends command `seq` to the packet being written. When it is full, only the newest command
   * still goes (in the place of the packet's newest one); the others wait for the next packet.
   */
  private addToRun(seq: number): void {
    const c = this.session.predictor.command(seq);
    if (c === undefined) {
      this.rangeOpen = false;
      return;
    }
    let count = this.run.count;
    const session = this.session;
    // A shot in its span goes past the budget's limit (not past a packet's): a shot held back
    // reaches the server later than the view it names allows.
    const limit =
      session.shotTailUntil[seq % RECEIVED_RING] >= session.commandPackets
        ? MAX_COMMANDS_PER_PACKET
        : this.runLimit;
    if (count >= limit) {
      // Full: the oldest stay (the server runs commands in order and waits for the oldest
      // missing one), but the newest command always goes, in the last place (the server dates a
      // packet by the newest command it carries); the ones between wait for the next packet.
      if (seq !== session.predictor.newestSequence) {
        this.rangeOpen = false;
        return;
      }
      this.dropNewest();
      count = this.run.count;
    }
    if (count > 0 && seq - this.lastWritten - 1 > MAX_COMMAND_SKIP) {
      this.dropOldest(count);
      this.run.count = 0;
    }
    copyUserCommand(this.sendCmds[this.run.count++], c);
    this.lastWritten = seq;
    // A range holds consecutive commands only (a packet's acknowledgement marks every one in it).
    if (this.rangeOpen && this.rangeHi[this.ranges - 1] === seq - 1) {
      this.rangeHi[this.ranges - 1] = seq;
    } else if (this.ranges < MAX_RANGES) {
      this.rangeLo[this.ranges] = seq;
      this.rangeHi[this.ranges++] = seq;
      this.rangeOpen = true;
    }
  }

  /** Drops the newest command from the packet being written (and from its ranges). */
  private dropNewest(): void {
    const count = --this.run.count;
    const seq = this.sendCmds[count].sequence;
    const r = this.ranges - 1;
    if (r >= 0 && this.rangeHi[r] === seq) {
      if (this.rangeLo[r] === seq) this.ranges--;
      else this.rangeHi[r] = seq - 1;
    }
    this.rangeOpen = false;
    this.lastWritten = count > 0 ? this.sendCmds[count - 1].sequence : this.session.predictor.ackedSequence;
  }

  /** Drops the `n` oldest commands from the packet being written (and from its ranges). */
  private dropOldest(n: number): void {
    const cmds = this.sendCmds;
    const count = cmds.length;
    for (let i = 0; i + n < count; i++) copyUserCommand(cmds[i], cmds[i + n]);
    let dropped = 0;
    while (dropped < n && this.ranges > 0) {
      const size = this.rangeHi[0] - this.rangeLo[0] + 1;
      if (size > n - dropped) {
        this.rangeLo[0] += n - dropped;
        dropped = n;
      } else {
        dropped += size;
        for (let r = 1; r < this.ranges; r++) {
          this.rangeLo[r - 1] = this.rangeLo[r];
          this.rangeHi[r - 1] = this.rangeHi[r];
        }
        this.ranges--;
      }
    }
  }

  /** One server frame: the player state acknowledges prediction, events play, the snapshot decodes. */
  private receiveFrame(s: BitStream): void {
    const session = this.session;
    const f = this.frame;
    this.packets.record(this.nowMs, PACKET_IN, (s.bitsProcessed + s.bitsRemaining) >>> 3);
    f.tickReference = session.spawned ? session.serverTick : -1;
    // A command number past 2^31 could not be followed by ours on the wire: refuse it.
    if (!serializeServerFrame(s, f, this.frameCodec) || f.ackedCommand > 0x7fffffff) {
      this.stats.framesBad++;
      return;
    }
    const tickRate = session.connection.tickRate;
    // A frame older than the newest (reordered) still brings its events and may become a
    // snapshot baseline; its player state and clock sample are out of date.
    if (f.serverTick > session.serverTick || !session.spawned) {
      // Snapshots sent since the newest before that never came (the loss model's count).
      const lostBefore = session.spawned
        ? framesLostBefore(f.serverTick - session.serverTick, tickRate / this.config.updateRate, f.choked)
        : 0;
      session.serverTick = f.serverTick;
      if (session.spawned) {
        const gap = this.nowMs - session.newestFrameAtMs;
        if (this.nowMs - session.frameGapSinceMs >= STALL_GAP_WINDOW_MS / 2) {
          session.frameGapMaxBefore = session.frameGapMax;
          session.frameGapMax = 0;
          session.frameGapSinceMs = this.nowMs;
        }
        // Every gap up to the longest wait counts (not only those under the current threshold, or
        // one lowered on a steady link would never rise again when the link's gaps grow).
        if (gap <= this.longestStallMs() && gap > session.frameGapMax) session.frameGapMax = gap;
      }
      session.newestFrameAtMs = this.nowMs;
      const rtt = session.connection.channel?.stats.rttMs ?? 0;
      session.clock.onServerTime(this.nowMs, (f.serverTick * 1000) / tickRate, rtt);
      if (this.config.interpolationDelayMs === 0) {
        session.adaptiveDelay?.setLimit(this.compensableDelayMs(rtt, 1000 / tickRate));
      }
      session.adaptiveDelay?.onSnapshot(
        this.nowMs,
        (f.serverTick * 1000) / tickRate,
        session.clock.receivedNow(this.nowMs),
        session.clock.targetMs,
        lostBefore,
      );
      if (!session.spawned) {
        session.spawned = true;
        session.predictor.reset(f.player, f.ackedCommand);
      } else {
        session.predictor.acknowledge(f.ackedCommand, f.player);
      }
    } else {
      this.stats.framesStale++;
    }
    this.stats.framesReceived++;
    this.stats.choked += f.choked;
    for (let i = 0; i < f.eventCount; i++) {
      this.stats.eventsReceived++;
      this.hooks.onEvent?.(f.events[i], false, 0);
    }
    if (f.snapshotOk) {
      session.view.onFrame(f.serverTick);
      this.hooks.onSnapshot?.(f.serverTick);
    }
  }
}

/** The adaptive delay a session keeps under `config` (null: a fixed delay). */
function adaptiveDelayFor(config: ClientConfig): AdaptiveDelay | null {
  const d = config.interpolationDelayMs;
  if (d === 'adaptive') return new AdaptiveDelay({ updateRateHz: config.updateRate });
  // The default: as adaptive, under a ceiling that follows the link's jitter from the paper's
  // delay up (random loss alone leaves it there), at least what the loss bursts' model asks (which
  // lifts the ceiling too), and under the longest delay the server compensates
  // (compensableDelayMs, set at each snapshot).
  if (d === 0) {
    return new AdaptiveDelay({
      updateRateHz: config.updateRate,
      jitterCoverage: DEFAULT_DELAY_JITTER_COVERAGE,
      ceilingFloorMs: defaultInterpolationDelayMs(config.updateRate),
      lossCoverage: DEFAULT_DELAY_LOSS_COVERAGE,
    });
  }
  return null;
}

function validateClientConfig(c: ClientConfig): void {
  for (const key of [
    'updateRate',
    'rateBytesPerSecond',
    'commandRate',
    'upRateBytesPerSecond',
    'connectRetryMs',
    'connectTimeoutMs',
    'timeoutMs',
  ] as const) {
    const v = c[key];
    if (typeof v !== 'number' || !(v > 0) || !Number.isFinite(v)) {
      throw new RangeError(`client config: ${key} must be a positive number, got ${String(v)}`);
    }
  }
  if (!Number.isInteger(c.updateRate) || c.updateRate > 255) {
    throw new RangeError(`client config: updateRate must be an integer in 1..255, got ${c.updateRate}`);
  }
  if (c.commandRedundancy !== 'acknowledged' && c.commandRedundancy !== 'bounded') {
    throw new RangeError(
      `client config: commandRedundancy must be 'acknowledged' or 'bounded', got ${String(c.commandRedundancy)}`,
    );
  }
  const d = c.interpolationDelayMs;
  if (d !== 'adaptive' && !(typeof d === 'number' && d >= 0 && d <= 1000)) {
    throw new RangeError(
      `client config: interpolationDelayMs must be 'adaptive' or a number in 0..1000, got ${String(d)}`,
    );
  }
  const k = c.serverPublicKey;
  if (k !== undefined && !(k instanceof Uint8Array && k.length === 32)) {
    throw new RangeError(
      'client config: serverPublicKey must be a 32-byte Uint8Array (GameServer.publicKey)',
    );
  }
  if (c.packetCipher !== undefined && typeof c.packetCipher !== 'function') {
    throw new RangeError(
      'client config: packetCipher must be a function (key) => PacketCipher, as nodeCipher',
    );
  }
  const t = c.connectToken;
  if (
    t !== undefined &&
    !(
      t !== null &&
      t.token instanceof Uint8Array &&
      t.token.length >= 1 &&
      t.token.length <= MAX_CONNECT_TOKEN_BYTES &&
      t.clientKey instanceof Uint8Array &&
      t.clientKey.length === TOKEN_CLIENT_KEY_BYTES
    )
  ) {
    throw new RangeError(
      `client config: connectToken must be a ConnectToken (token of 1..${MAX_CONNECT_TOKEN_BYTES} bytes, 32-byte clientKey) from issueConnectToken or decodeConnectToken`,
    );
  }
}
