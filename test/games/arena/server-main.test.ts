// The arena's dedicated server as a process: it listens where it says, answers its health check,
// takes a real client over UDP, and stops cleanly on SIGTERM.
import { type ChildProcess, spawn } from 'node:child_process';
import { get } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { arenaGame } from '../../../games/arena/shared/game.ts';
import { createInputSample, GameClient } from '../../../src/client/client.ts';
import { REFUSE_NO_SUCH_MATCH } from '../../../src/net/handshake.ts';
import { MatchClientEndpoint } from '../../../src/net/match-route.ts';
import { connectNode } from '../../../src/node.ts';

let child: ChildProcess | null = null;
afterEach(() => {
  child?.kill('SIGKILL');
  child = null;
});

function status(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    }).on('error', reject);
  });
}

/** Starts the server with `args` and resolves with its port and output, once it says it listens. */
async function start(args: string[]) {
  const proc = spawn(
    process.execPath,
    ['--conditions=backstep-source', '--import', 'tsx', 'games/arena/server/main.ts', '--port', '0', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child = proc;
  const out = { text: '' };
  proc.stdout?.on('data', (d: Buffer) => {
    out.text += d.toString();
  });
  proc.stderr?.on('data', (d: Buffer) => {
    out.text += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 30_000;
  while (!/listening on 127\.0\.0\.1:\d+/.test(out.text) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const port = Number(/listening on 127\.0\.0\.1:(\d+)/.exec(out.text)?.[1]);
  return { proc, out, exited, port };
}

describe('the arena dedicated server', () => {
  it('hosts matches on worker threads with --matches: clients join one by id on the one port', async () => {
    const { proc, out, exited, port } = await start(['--matches', '2', '--workers', '1']);
    expect(port, out.text).toBeGreaterThan(0);
    expect(out.text).toContain('matches 1..2 on 1 worker threads');
    // The optional sodium-native is installed with this repository: the log says the server uses it.
    expect(out.text).toContain('packets sealed with libsodium');
    expect(await status(`http://127.0.0.1:${port}/healthz`)).toBe(200);
    const joins = [];
    for (const id of [2, 3]) {
      const endpoint = await connectNode(`udp://127.0.0.1:${port}`);
      const client = new GameClient(
        arenaGame,
        new MatchClientEndpoint(endpoint, id),
        endpoint.serverAddress,
        {
          seed: id,
        },
      );
      client.connect(performance.now());
      joins.push({ client, endpoint });
    }
    const [player, lost] = joins;
    const input = createInputSample();
    const until = Date.now() + 8000;
    while (
      (player.client.state !== 'connected' ||
        player.client.snapshots.stats.framesRead < 10 ||
        lost.client.state !== 'refused') &&
      Date.now() < until
    ) {
      for (const j of joins) j.client.update(performance.now(), input);
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(player.client.state, out.text).toBe('connected');
    expect(player.client.snapshots.stats.framesRead).toBeGreaterThanOrEqual(10);
    expect(lost.client.endReason).toBe(REFUSE_NO_SUCH_MATCH);
    player.client.disconnect();
    for (const j of joins) await j.endpoint.close();
    proc.kill('SIGTERM');
    expect(await exited, out.text).toBe(0);
    expect(out.text).toContain('arena server stopped');
  });

  it('listens, answers /healthz, plays with a UDP client and stops on SIGTERM', async () => {
    const proc = spawn(
      process.execPath,
      ['--conditions=backstep-source', '--import', 'tsx', 'games/arena/server/main.ts', '--port', '0'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = proc;
    let output = '';
    proc.stdout?.on('data', (d: Buffer) => {
      output += d.toString();
    });
    proc.stderr?.on('data', (d: Buffer) => {
      output += d.toString();
    });
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    const deadline = Date.now() + 20_000;
    while (!/listening on 127\.0\.0\.1:\d+/.test(output) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const port = Number(/listening on 127\.0\.0\.1:(\d+)/.exec(output)?.[1]);
    expect(port, output).toBeGreaterThan(0);
    expect(await status(`http://127.0.0.1:${port}/healthz`)).toBe(200);
    expect(await status(`http://127.0.0.1:${port}/other`)).toBe(404);

    const endpoint = await connectNode(`udp://127.0.0.1:${port}`);
    const client = new GameClient(arenaGame, endpoint, endpoint.serverAddress, { seed: 3 });
    const input = createInputSample();
    client.connect(performance.now());
    const until = Date.now() + 5000;
    while ((client.state !== 'connected' || client.snapshots.stats.framesRead < 10) && Date.now() < until) {
      client.update(performance.now(), input);
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(client.state).toBe('connected');
    expect(client.snapshots.stats.framesRead).toBeGreaterThanOrEqual(10);
    client.disconnect();
    await endpoint.close();

    proc.kill('SIGTERM');
    expect(await exited, output).toBe(0);
    expect(output).toContain('arena server stopped');
  });
});
