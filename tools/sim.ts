// The simulation harness: `npm run sim -- [options]` runs the arena server and bots over the memory
// transport on simulated time (reproducible from --seed) or over UDP on loopback in real time, and
// reports hit agreement, corrections, bandwidth, choke, view and tick time (tools/sim/README.md).

import { writeFileSync } from 'node:fs';
import { renderChart } from './sim/chart.ts';
import { describePlan, resolveSimPlan, type SimPlan, USAGE } from './sim/options.ts';
import { describeRun, formatReport } from './sim/report.ts';
import { runSim } from './sim/runner.ts';
import { formatFlags, judgeRun } from './sim/verdict.ts';

async function main(argv: readonly string[]): Promise<number> {
  if (argv.includes('--help')) {
    console.log(USAGE);
    return 0;
  }
  let plan: SimPlan;
  try {
    plan = resolveSimPlan(argv);
  } catch (e) {
    console.error(`sim: ${(e as Error).message}`);
    return 2;
  }
  console.log(describeRun(describePlan(plan)));
  const result = await runSim(plan, (line) => console.error(line));
  console.log(formatReport(result));
  const flags = judgeRun(result);
  console.log(formatFlags(flags));
  if (plan.json !== null) {
    writeFileSync(plan.json, `${JSON.stringify(result, null, 2)}\n`);
    console.log(`\nwrote ${plan.json}`);
  }
  if (result.demo !== undefined) {
    const d = result.demo;
    console.log(
      `\nrecorded ${d.file}: ${d.bytes} bytes, ${d.ticks} ticks (${d.keyframes} keyframes), ${d.shots} shots, ${d.kills} kills, ${d.killcams} killcams; ${Math.round((d.bytes * plan.scenario.tickRate) / Math.max(1, d.ticks))} bytes per second`,
    );
  }
  if (plan.chart !== null) {
    writeFileSync(plan.chart, renderChart(result));
    console.log(`${plan.json === null ? '\n' : ''}wrote ${plan.chart}`);
  }
  return plan.strict && flags.length > 0 ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));
