// The shooter's-eye killcam: for every player, the last seconds of its commands, each with the
// player's own entity after it ran and the view the command named, rebuilt from the values the
// client held (NamedViewBuilder). After a kill, `capture` turns the killer's window into a
// Killcam (src/protocol/demo.ts) that the victim's client draws command by command: the
// killer's movement and every other entity exactly as the killer's client blended them.

import { BitStream } from '../protocol/bitstream.ts';
import {
  type Killcam,
  type KillcamFrame,
  killcamMessages,
  serializeKillcam,
  type ViewEntity,
} from '../protocol/demo.ts';
import { encodeField } from '../protocol/schema.ts';
import { copyUserCommand, createUserCommand, type UserCommand } from '../protocol/usercmd.ts';
import type { GameDefinition } from '../sim/game.ts';
import type { ServerHooks } from './hooks.ts';
import { NamedView, NamedViewBuilder } from './named-view.ts';
import type { GameServer, ServerClient } from './server.ts';

export interface KillcamConfig {
  /** Most commands kept per player (a power of two): at 60 commands a second, 512 is 8.5 s. */
  commandsPerPlayer: number;
}

export const DEFAULT_KILLCAM_CONFIG: KillcamConfig = { commandsPerPlayer: 512 };

export interface KillcamStats {
  /** Commands recorded, and those whose named view could not be rebuilt (recorded with no view). */
  commands: number;
  viewsMissing: number;
  captures: number;
}

class CommandRecord {
  readonly command: UserCommand = createUserCommand();
  tick = -1;
  readonly player: Int32Array;
  readonly view: NamedView;
  hasView = false;
  constructor(playerFields: number, stride: number) {
    this.player = new Int32Array(playerFields);
    this.view = new NamedView(stride);
  }
}

class PlayerRing {
  head = 0;
  count = 0;
  readonly records: CommandRecord[] = [];
}

/**
 * Records every player's commands and named views through its hooks (combine them with the
 * game's); `capture` builds a killcam. Recording a command costs one pass over the entities its
 * view held, without allocating once warmed up.
 */
export class KillcamRecorder<P, W> {
  readonly config: KillcamConfig;
  readonly stats: KillcamStats = { commands: 0, viewsMissing: 0, captures: 0 };
  readonly hooks: ServerHooks<P, W>;
  private readonly game: GameDefinition<P, W>;
  private readonly rings: PlayerRing[] = [];
  private readonly mask: number;
  private readonly scratch: Float64Array;
  private builder: NamedViewBuilder | null = null;
  private sentCount = 0;

  constructor(game: GameDefinition<P, W>, config: Partial<KillcamConfig> = {}) {
    this.config = { ...DEFAULT_KILLCAM_CONFIG, ...config };
    const n = this.config.commandsPerPlayer;
    if (!Number.isInteger(n) || n < 2 || n > 65536 || (n & (n - 1)) !== 0) {
      throw new RangeError(`killcam: commandsPerPlayer must be a power of two in 2..65536, got ${n}`);
    }
    this.mask = n - 1;
    this.game = game;
    this.scratch = new Float64Array(game.entities.stride);
    this.hooks = {
      onConnect: (_server, client) => {
        const ring = this.ring(client.slot);
        ring.count = 0;
      },
      onCommand: (server, client, cmd) => this.record(server, client, cmd),
    };
  }

  /**
   * The killer's last `durationMs` of commands (as far as recorded), oldest first, as a Killcam
   * for `victim` (null: no victim, a replay of the killer's view). Null when nothing is recorded.
   */
  capture(killer: ServerClient<P>, victim: ServerClient<P> | null, durationMs: number): Killcam | null {
    if (!(durationMs > 0)) throw new RangeError(`killcam: durationMs must be > 0, got ${durationMs}`);
    const ring = this.rings[killer.slot];
    if (ring === undefined || ring.count === 0) return null;
    let taken = 0;
    let ms = 0;
    while (taken < ring.count && ms < durationMs) {
      const r = ring.records[(ring.head - 1 - taken) & this.mask];
      ms += r.command.msec;
      taken++;
    }
    const schema = this.game.entities;
    const playerType = this.game.playerEntity.typeId;
    const frames: KillcamFrame[] = [];
    for (let i = taken - 1; i >= 0; i--) {
      const r = ring.records[(ring.head - 1 - i) & this.mask];
      const view: ViewEntity[] = [];
      const v = r.view;
      for (let k = 0; r.hasView && k < v.count; k++) {
        const n = schema.types[v.types[k]].fieldCount;
        const o = k * v.stride;
        view.push({
          entity: v.entities[k],
          typeId: v.types[k],
          inA: v.inA(k),
          inB: v.inB(k),
          parityA: v.parityA(k),
          parityB: v.parityB(k),
          a: v.a.slice(o, o + n),
          b: v.b.slice(o, o + n),
        });
      }
      frames.push({
        command: copyUserCommand(createUserCommand(), r.command),
        tick: r.tick,
        player: r.player.slice(),
        view,
      });
    }
    this.stats.captures++;
    return {
      killerSlot: killer.slot,
      victimSlot: victim?.slot ?? killer.slot,
      killerEntity: killer.entity,
      victimEntity: victim?.entity ?? killer.entity,
      playerType,
      frames,
    };
  }

  /**
   * Sends `killcam` to `victim` as reliable game messages (KILLCAM_MESSAGE_TAG first; the victim's
   * client puts them together with a KillcamAssembler and draws with drawKillcamFrame). Returns
   * false when the victim's window of messages had no room for every part (the parts that went
   * are dropped by the assembler when the next killcam starts).
   */
  send(server: GameServer<P, W>, victim: ServerClient<P>, killcam: Killcam, maxMessageBytes = 1024): boolean {
    const s = new BitStream(1 << 20);
    s.beginWrite();
    if (!serializeKillcam(s, killcam, this.game.entities)) return false;
    const parts = killcamMessages(s.bytes, this.sentCount++, maxMessageBytes);
    for (const m of parts) if (!server.sendMessage(victim, m)) return false;
    return true;
  }

  private ring(slot: number): PlayerRing {
    let ring = this.rings[slot];
    if (ring === undefined) {
      ring = new PlayerRing();
      const fields = this.game.entities.types[this.game.playerEntity.typeId].fieldCount;
      for (let i = 0; i <= this.mask; i++)
        ring.records.push(new CommandRecord(fields, this.game.entities.stride));
      this.rings[slot] = ring;
    }
    return ring;
  }

  private record(server: GameServer<P, W>, client: ServerClient<P>, cmd: UserCommand): void {
    if (this.builder === null) this.builder = new NamedViewBuilder(server.entities);
    const ring = this.ring(client.slot);
    const r = ring.records[ring.head & this.mask];
    ring.head = (ring.head + 1) & 0x3fffffff;
    if (ring.count <= this.mask) ring.count++;
    copyUserCommand(r.command, cmd);
    r.tick = server.tick;
    const type = this.game.entities.types[this.game.playerEntity.typeId];
    this.game.playerEntity.write(client.state, this.scratch);
    for (let f = 0; f < type.fieldCount; f++) r.player[f] = encodeField(type, f, this.scratch[f]);
    r.hasView =
      cmd.viewTickB !== 0 && this.builder.build(client.snapshots, cmd.viewTickA, cmd.viewTickB, r.view);
    this.stats.commands++;
    if (!r.hasView && cmd.viewTickB !== 0) this.stats.viewsMissing++;
  }
}
