// The 512-player large-level server replayed alone in four forms: its code through tsx one module a
// file or as one esbuild bundle, each with V8's default inlining budgets and with them raised. Not
// in the default run (`npm run bench -- inlining`): it records the match once and replays it in
// eight processes, about 12 minutes on this machine.

import { mean, percentile, Samples } from '../stats.ts';
import { type Row, round, table } from './report.ts';
import {
  beginMeasured,
  createServerRecording,
  endMeasured,
  fastestPerUpdate,
  replayServerInProcess,
  type ServerReplayJob,
} from './server-replay.ts';
import { DEFAULT_SERVER_TICK_OPTIONS, tickScene } from './server-tick.ts';

/** V8's inlining budgets raised (its defaults: 920 bytes of bytecode in all, 460 a function). */
export const RAISED_INLINING_FLAGS: readonly string[] = [
  '--max-inlined-bytecode-size-cumulative=3000',
  '--max-inlined-bytecode-size=800',
];

const BOTS = 512;
const PASSES = 3;
const ROUNDS = 2;

interface Form {
  name: string;
  form: NonNullable<ServerReplayJob['form']>;
  nodeFlags: readonly string[];
}

const FORMS: readonly Form[] = [
  { name: 'modules (tsx), default budgets', form: 'modules', nodeFlags: [] },
  { name: 'modules (tsx), budgets raised', form: 'modules', nodeFlags: RAISED_INLINING_FLAGS },
  { name: 'one bundle, default budgets', form: 'bundle', nodeFlags: [] },
  { name: 'one bundle, budgets raised', form: 'bundle', nodeFlags: RAISED_INLINING_FLAGS },
];

export async function inliningSection(): Promise<void> {
  const o = DEFAULT_SERVER_TICK_OPTIONS;
  const recording = createServerRecording(o.seed);
  const match = tickScene('large', BOTS, o, recording);
  beginMeasured(recording);
  match.run(o.measureMsFor[BOTS] ?? o.measureMs);
  endMeasured(recording);
  match.close();
  // Each round runs the four forms, the second in the reverse order, so the machine's drift
  // over the run weighs on every form alike.
  const means: number[][] = FORMS.map(() => []);
  const fastest: Samples[] = FORMS.map(() => new Samples());
  for (let round = 0; round < ROUNDS; round++) {
    const order = FORMS.map((_, i) => (round % 2 === 0 ? i : FORMS.length - 1 - i));
    for (const i of order) {
      const f = FORMS[i];
      const result = await replayServerInProcess({
        recording,
        scene: 'large',
        bots: BOTS,
        passes: PASSES,
        form: f.form,
        nodeFlags: f.nodeFlags,
      });
      const each = fastestPerUpdate(result);
      for (const ms of each) fastest[i].add(ms);
      means[i].push(mean(each) ?? 0);
    }
  }
  const rows: Record<string, Row> = {};
  for (let i = 0; i < FORMS.length; i++) {
    const sorted = fastest[i].sorted();
    rows[FORMS[i].name] = {
      'p50 (ms)': round(percentile(sorted, 0.5) ?? 0, 2),
      'p99 (ms)': round(percentile(sorted, 0.99) ?? 0, 2),
      'mean of each round (ms)': means[i].map((m) => round(m, 2)).join(', '),
      'mean / first form, each round': means[i].map((m, r) => round(m / means[0][r], 3)).join(', '),
    };
  }
  table(
    `The server alone in four forms, large level, ${BOTS} bots: each update's fastest of ${PASSES} runs`,
    rows,
    [
      "The match's server recorded once (as the server section's replay), then replayed in a process of its own",
      `  per form and round (${ROUNDS} rounds, the second in the reverse order); every run sends the recorded`,
      '  datagrams byte for byte. modules: the code through tsx, one module a file, as the benchmarks run;',
      '  one bundle: engine and game built into one ES module by esbuild (server-replay.ts).',
      `  budgets raised: node ${RAISED_INLINING_FLAGS.join(' ')}.`,
      "  p50 and p99 pool every round; the last column is each round's mean against the first form's.",
    ],
  );
}
