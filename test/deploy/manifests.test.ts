// The deployment files agree with Agones' resource definitions (field names and allowed values
// of the GameServer, Fleet and FleetAutoscaler CRDs) and with each other and the Dockerfile: the
// same port everywhere, the health endpoint the server answers.
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
type Node = Record<string, unknown>;

function load(name: string): Node {
  return parse(readFileSync(join(ROOT, 'deploy', 'agones', name), 'utf8')) as Node;
}

/** The keys `node` has that `allowed` does not list (a misspelt or unknown CRD field). */
function unknownKeys(node: unknown, allowed: readonly string[]): string[] {
  expect(node !== null && typeof node === 'object').toBe(true);
  return Object.keys(node as Node).filter((k) => !allowed.includes(k));
}

// Field names of the Agones v1 CRDs (agones.dev/v1 GameServer and Fleet, autoscaling.agones.dev/v1 FleetAutoscaler).
const GAMESERVER_SPEC = [
  'container',
  'ports',
  'health',
  'scheduling',
  'sdkServer',
  'template',
  'players',
  'counters',
  'lists',
  'eviction',
];
const PORT = ['name', 'portPolicy', 'container', 'containerPort', 'hostPort', 'protocol', 'range'];
const PORT_POLICIES = ['Dynamic', 'Static', 'Passthrough', 'None'];
const PROTOCOLS = ['UDP', 'TCP', 'TCPUDP'];
const HEALTH = ['disabled', 'initialDelaySeconds', 'periodSeconds', 'failureThreshold'];
const FLEET_SPEC = ['replicas', 'allocationOverflow', 'strategy', 'scheduling', 'priorities', 'template'];
const AUTOSCALER_SPEC = ['fleetName', 'policy', 'sync'];
const POLICY = ['type', 'buffer', 'webhook', 'counter', 'list', 'schedule', 'chain'];
const BUFFER = ['bufferSize', 'minReplicas', 'maxReplicas'];

/** The Dockerfile's port: what it exposes and what its command tells the server to listen on. */
function dockerPort(): number {
  const docker = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const exposed = [...docker.matchAll(/EXPOSE\s+(\d+)\/udp\s+(\d+)\/tcp/g)].map((m) => [
    Number(m[1]),
    Number(m[2]),
  ]);
  const command = /"--port",\s*"(\d+)"/.exec(docker);
  expect(exposed.length).toBe(1);
  expect(exposed[0][0]).toBe(exposed[0][1]);
  expect(Number(command?.[1])).toBe(exposed[0][0]);
  expect(docker).toMatch(/FROM node:20-slim/);
  expect(docker).toMatch(/HEALTHCHECK .*\n?.*\/healthz/);
  return exposed[0][0];
}

/** Checks a GameServer spec (also a Fleet's template spec) against the CRD and the Dockerfile. */
function checkGameServerSpec(spec: Node, port: number): void {
  expect(unknownKeys(spec, GAMESERVER_SPEC)).toEqual([]);
  const ports = spec.ports as Node[];
  expect(ports.length).toBeGreaterThan(0);
  for (const p of ports) {
    expect(unknownKeys(p, PORT)).toEqual([]);
    expect(PORT_POLICIES).toContain(p.portPolicy);
    expect(PROTOCOLS).toContain(p.protocol);
  }
  // UDP and TCP (WebSocket, signalling, health) on the one port the server listens on.
  expect(ports.find((p) => p.containerPort === port && p.protocol === 'TCPUDP')).toBeDefined();
  expect(unknownKeys(spec.health, HEALTH)).toEqual([]);
  const containers = ((spec.template as Node).spec as Node).containers as Node[];
  expect(containers.length).toBe(1);
  const probe = (containers[0].livenessProbe as Node).httpGet as Node;
  expect(probe).toEqual({ path: '/healthz', port });
  expect(typeof containers[0].image).toBe('string');
}

describe('the Dockerfile', () => {
  const docker = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');

  it('runs built JavaScript: the command runs a script the build stage bundles from the game', () => {
    expect(docker).toMatch(/FROM node:20-slim AS build[\s\S]*RUN npm run build/);
    const bundle = /esbuild ((?:\S+\.ts\s+)+)[\s\S]*?--outdir=(\S+)/.exec(docker);
    expect(bundle, 'an esbuild step with entries and --outdir').not.toBeNull();
    const entries = (bundle?.[1] ?? '').trim().split(/\s+/);
    for (const entry of entries) expect(existsSync(join(ROOT, entry)), entry).toBe(true);
    const outputs = entries.map((e) => `${bundle?.[2]}/${basename(e, '.ts')}.js`);
    const command = /CMD \["node", (?:"--[^"]+", )*"([^"]+)"/.exec(docker)?.[1];
    expect(outputs).toContain(command);
    // A server given one core collects on its own thread (docs/deployment.md, "One core each").
    expect(docker).toMatch(/CMD \["node", "--single-threaded-gc", /);
    // The server's worker threads load the match module from next to it.
    expect(outputs).toContain(`${bundle?.[2]}/match.js`);
    expect(docker).not.toMatch(/CMD .*tsx/);
    expect(docker).toMatch(/COPY --from=build \S+\/dist \.\/dist/);
  });

  it('installs runtime packages only, and the Agones SDK at the version of the lock file', () => {
    expect(docker).toMatch(/npm ci --omit=dev/);
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
    const version = lock.packages['node_modules/@google-cloud/agones-sdk'].version;
    expect(docker).toContain(`@google-cloud/agones-sdk@${version}`);
  });
});

describe('Agones manifests', () => {
  const port = dockerPort();

  it('the GameServer uses only the CRD fields, on the Dockerfile port, with the map and mode labels', () => {
    const gs = load('gameserver.yaml');
    expect(gs.apiVersion).toBe('agones.dev/v1');
    expect(gs.kind).toBe('GameServer');
    expect((gs.metadata as Node).labels).toEqual({
      'backstep.dev/map': 'arena',
      'backstep.dev/mode': 'deathmatch',
    });
    checkGameServerSpec(gs.spec as Node, port);
  });

  it('the Fleet templates the same GameServer, packed', () => {
    const fleet = load('fleet.yaml');
    expect(fleet.apiVersion).toBe('agones.dev/v1');
    expect(fleet.kind).toBe('Fleet');
    const spec = fleet.spec as Node;
    expect(unknownKeys(spec, FLEET_SPEC)).toEqual([]);
    expect(['Packed', 'Distributed']).toContain(spec.scheduling);
    expect(Number.isInteger(spec.replicas)).toBe(true);
    const template = spec.template as Node;
    checkGameServerSpec(template.spec as Node, port);
    expect(template.spec).toEqual(load('gameserver.yaml').spec);
  });

  it('the FleetAutoscaler keeps a buffer of the fleet', () => {
    const fas = load('fleetautoscaler.yaml');
    expect(fas.apiVersion).toBe('autoscaling.agones.dev/v1');
    expect(fas.kind).toBe('FleetAutoscaler');
    const spec = fas.spec as Node;
    expect(unknownKeys(spec, AUTOSCALER_SPEC)).toEqual([]);
    expect(spec.fleetName).toBe((load('fleet.yaml').metadata as Node).name);
    const policy = spec.policy as Node;
    expect(unknownKeys(policy, POLICY)).toEqual([]);
    expect(policy.type).toBe('Buffer');
    const buffer = policy.buffer as Node;
    expect(unknownKeys(buffer, BUFFER)).toEqual([]);
    expect(buffer.minReplicas as number).toBeLessThanOrEqual(buffer.maxReplicas as number);
  });
});
