// Server-side game code's hooks into the game loop, and a combiner so several sets (the game's
// rules, a tool's measurements) can listen at once.

import type { UserCommand } from '../protocol/usercmd.ts';
import type { EventCapture } from './events.ts';
import type { GameServer, ServerClient } from './server.ts';

/** Server-side game code: server-controlled objects and reactions to clients coming and going. */
export interface ServerHooks<P, W> {
  /** After every client's commands ran this tick. */
  onTick?(server: GameServer<P, W>, tick: number): void;
  /**
   * After the tick's world was committed (`server.entities.history(tick)` holds it) and before
   * the clients' frames go: where recorders and spectator streams read the tick.
   */
  afterTick?(server: GameServer<P, W>, tick: number): void;
  /** After a client's command ran (its state is the result). */
  onCommand?(server: GameServer<P, W>, client: ServerClient<P>, cmd: UserCommand): void;
  /**
   * Before a command that may fire a hit-scan weapon runs: the place for tools that judge the
   * same shot in other ways (`GameServer.judgeShot`, which changes nothing).
   */
  beforeShot?(server: GameServer<P, W>, client: ServerClient<P>, cmd: UserCommand): void;
  /**
   * A command that may fire a hit-scan weapon ran against the world as the shooter saw it (lag
   * compensation in the configured mode); `events` holds what the shared code emitted (its hits).
   */
  onShot?(server: GameServer<P, W>, client: ServerClient<P>, cmd: UserCommand, events: EventCapture): void;
  /** A new player joined: its state was just spawned (`GameDefinition.spawn`). */
  onConnect?(server: GameServer<P, W>, client: ServerClient<P>): void;
  /** The player left (its slot is free, its entity gone); `reason` is a DISCONNECT_* code. */
  onDisconnect?(server: GameServer<P, W>, client: ServerClient<P>, reason: number): void;
  /**
   * The player's connection dropped (timed out or left) and it waits for its client to come
   * back within `reconnectGraceMs`; then `onReconnect`, or `onDisconnect` once the time is up.
   */
  onAway?(server: GameServer<P, W>, client: ServerClient<P>, reason: number): void;
  /** The player's client came back with its resume token: same slot, same player state. */
  onReconnect?(server: GameServer<P, W>, client: ServerClient<P>): void;
  /**
   * A reliable game message from the client (`GameClient.sendMessage`), exactly once and in
   * order, before its commands of the tick run; at most MAX_MESSAGES_PER_TICK (16) a client a
   * tick, the rest waiting in the channel's window (past which the client's own are refused and
   * sent again). Its bytes come from the network: check them.
   * Without this hook the messages stay in the channel, for a game that reads them itself
   * (`client.channel.receiveReliable()`).
   */
  onMessage?(server: GameServer<P, W>, client: ServerClient<P>, message: Uint8Array): void;
}

/** One set of hooks that calls each given set in turn, in order. */
export function combineHooks<P, W>(...all: ServerHooks<P, W>[]): ServerHooks<P, W> {
  return {
    onTick: (s, t) => {
      for (const h of all) h.onTick?.(s, t);
    },
    afterTick: (s, t) => {
      for (const h of all) h.afterTick?.(s, t);
    },
    onCommand: (s, c, cmd) => {
      for (const h of all) h.onCommand?.(s, c, cmd);
    },
    beforeShot: (s, c, cmd) => {
      for (const h of all) h.beforeShot?.(s, c, cmd);
    },
    onShot: (s, c, cmd, events) => {
      for (const h of all) h.onShot?.(s, c, cmd, events);
    },
    onConnect: (s, c) => {
      for (const h of all) h.onConnect?.(s, c);
    },
    onDisconnect: (s, c, r) => {
      for (const h of all) h.onDisconnect?.(s, c, r);
    },
    onAway: (s, c, r) => {
      for (const h of all) h.onAway?.(s, c, r);
    },
    onReconnect: (s, c) => {
      for (const h of all) h.onReconnect?.(s, c);
    },
    // Present only when a set has it: without one, messages stay in the channel (see onMessage).
    onMessage: all.some((h) => h.onMessage !== undefined)
      ? (s, c, m) => {
          for (const h of all) h.onMessage?.(s, c, m);
        }
      : undefined,
  };
}
