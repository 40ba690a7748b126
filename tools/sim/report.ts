// The sim's printed report: a header line for the plan, and the figures as a grouped table with
// each row's JSON name beside it.

import { LAG_COMPENSATION_MODES, VIEW_OUTCOME_NAMES } from '../../src/server/lag-compensation.ts';
import {
  DISAGREEMENT_FIGURES,
  type Figure,
  OUTAGE_RECOVERY_MS,
  RATE_STARTUP_MS,
  STEADY_AFTER_MS,
} from './metrics.ts';
import type { SimOptionsSummary } from './options.ts';
import type { SimResult } from './runner.ts';

/** One line saying what runs: bots, profiles, duration, seed, transport, deciding mode. */
export function describeRun(options: SimOptionsSummary): string {
  const profiles = Object.entries(options.profiles)
    .map(([name, count]) => `${count} ${name}`)
    .join(', ');
  const clock = options.transport === 'memory' ? 'simulated' : 'real';
  return `Backstep sim: scenario ${options.scenario}, ${options.bots} bots (${options.aimBots} aiming, ${
    options.runnerBots
  } runners; profiles: ${profiles}), ${options.seconds} s ${clock}, seed ${options.seed}, ${
    options.transport
  } transport${options.threads > 1 ? ` on ${options.threads} threads` : ''}; lag compensation "${options.lagCompensation}" decides, all three judged`;
}

function fixed(x: Figure, digits: number, unit = ''): string {
  return x === null ? '-' : `${x.toFixed(digits)}${unit}`;
}

function percent(x: Figure, digits = 2): string {
  return x === null ? '-' : `${(x * 100).toFixed(digits)} %`;
}

function count(x: Figure): string {
  return x === null ? '-' : Math.round(x).toLocaleString('en-US');
}

type Row = readonly [label: string, value: string, detail: string, name: string];

/** The figures as a table: groups of rows (label, value, detail, JSON name). */
export function formatReport(result: SimResult): string {
  const f = result.figures;
  const get = (name: string): Figure => (Object.hasOwn(f, name) ? f[name] : null);
  const decisive = result.options.lagCompensation;
  let disagreed = 0;
  for (const name of DISAGREEMENT_FIGURES) disagreed += get(name) ?? 0;
  const groups: [string, Row[]][] = [];
  groups.push([
    "hit agreement: share of rays whose client verdict (hit or miss, which player, which box) equals the server's; all modes judge the same rays",
    LAG_COMPENSATION_MODES.map(
      (m): Row => [
        `${m}${m === decisive ? ' (decides)' : ''}`,
        percent(get(`hitAgreement.${m}`)),
        `${count(get(`hitAgreement.${m}.agreed`))} of ${count(get(`hitAgreement.${m}.compared`))} rays`,
        `hitAgreement.${m}`,
      ],
    ),
  ]);
  groups.push([
    'shots',
    [
      ['rays the server judged', count(get('shots.rays')), '', 'shots.rays'],
      [
        'rays known uncompensated',
        percent(get('shots.uncompensatedShare')),
        `${count(get(`hitAgreement.${decisive}.uncompensated`))} rays: the client knew the server would not honour the view, showed no hit, counted as agreed`,
        'shots.uncompensatedShare',
      ],
      [
        'of those, the server differed',
        percent(get('shots.uncompensatedDifferingShare')),
        `${count(get(`hitAgreement.${decisive}.uncompensatedDiffering`))} rays whose server verdict differs from the no hit the client showed: what counting views out cost the shooters`,
        'shots.uncompensatedDifferingShare',
      ],
      [
        'disagreeing rays',
        count(disagreed),
        disagreed === 0
          ? 'by what became of the named view'
          : DISAGREEMENT_FIGURES.map((name, o) => [VIEW_OUTCOME_NAMES[o], get(name) ?? 0] as const)
              .filter(([, n]) => n > 0)
              .map(([why, n]) => `${count(n)} ${why}`)
              .join(', '),
        'disagreements.*',
      ],
      ["hits on the shooters' screens", count(get('shots.clientHits')), '', 'shots.clientHits'],
      ['hits on the server (deciding mode)', count(get('shots.serverHits')), '', 'shots.serverHits'],
      [
        'hits around a corner',
        count(get('shots.aroundCorner')),
        `${percent(get('shots.aroundCornerShare'))} of server hits: target behind cover by then`,
        'shots.aroundCorner',
      ],
      [
        'commands fired mispredicted',
        count(get('shots.mispredictedCommands')),
        "shooter's own state wrong: left out of agreement",
        'shots.mispredictedCommands',
      ],
      [
        'shots the server never judged',
        count(get('shots.unjudged')),
        `${count(get('shots.unjudgedHitsShown'))} rays shown as hits; the command lost (or filled in): left out of agreement`,
        'shots.unjudged',
      ],
      ['kills', count(get('kills')), `${count(get('damage'))} damage`, 'kills'],
    ],
  ]);
  groups.push([
    'prediction (local player)',
    [
      [
        'corrections per minute',
        fixed(get('prediction.correctionsPerMinute'), 1),
        `per client (${count(get('prediction.corrections'))} in all; any field: damage counts)`,
        'prediction.correctionsPerMinute',
      ],
      [
        'visible corrections per minute',
        fixed(get('prediction.visibleCorrectionsPerMinute'), 1),
        'per client: the drawn player moved',
        'prediction.visibleCorrectionsPerMinute',
      ],
      [
        'mean correction',
        fixed(get('prediction.meanCorrectionUnits'), 2, ' u'),
        'units',
        'prediction.meanCorrectionUnits',
      ],
      [
        'largest correction',
        fixed(get('prediction.maxCorrectionUnits'), 2, ' u'),
        '',
        'prediction.maxCorrectionUnits',
      ],
      [
        'largest visible error',
        fixed(get('prediction.maxVisibleErrorUnits'), 2, ' u'),
        `before smoothing; ${count(get('prediction.snaps'))} snapped`,
        'prediction.maxVisibleErrorUnits',
      ],
    ],
  ]);
  groups.push([
    'bandwidth and choke',
    [
      [
        'down (server to client)',
        count(get('bytesPerClientPerSecond.down')),
        'bytes per second per client, packet headers included',
        'bytesPerClientPerSecond.down',
      ],
      [
        'up (client to server)',
        count(get('bytesPerClientPerSecond.up')),
        'bytes per second per client',
        'bytesPerClientPerSecond.up',
      ],
      [
        'round trip',
        fixed(get('rtt.meanMs'), 0, ' ms'),
        `server side, mean after 10 s (max ${fixed(get('rtt.maxMs'), 0, ' ms')}); the rate control's base ${fixed(get('rtt.baseMs'), 0, ' ms')}`,
        'rtt.meanMs',
      ],
      [
        'queues on the links',
        fixed(get('rtt.queueMs'), 0, ' ms'),
        `added to the round trip after 10 s: mean wait in the bandwidth queues, down ${fixed(get('rtt.queueDownMs'), 0, ' ms')}, up ${fixed(get('rtt.queueUpMs'), 0, ' ms')} (links with a bandwidth only)`,
        'rtt.queueMs',
      ],
      [
        'down rate found',
        count(get('rate.downBytesPerSecond')),
        'bytes per second per client the rate control allows at the end (upper bound: --rate)',
        'rate.downBytesPerSecond',
      ],
      [
        'choke',
        percent(get('choke.share')),
        `${count(get('choke.frames'))} frames held back by the rate, ${count(get('snapshots.sent'))} sent`,
        'choke.share',
      ],
      [
        'choke after the start',
        percent(get('choke.steadyShare')),
        `leaving out the first ${RATE_STARTUP_MS / 1000} s, while the rate control climbs from its start`,
        'choke.steadyShare',
      ],
    ],
  ]);
  groups.push([
    'view of remote players (share of client frames)',
    [
      ['interpolated', percent(get('view.interpolatedShare')), '', 'view.interpolatedShare'],
      ['extrapolated', percent(get('view.extrapolatedShare')), 'history ran dry', 'view.extrapolatedShare'],
      [
        'held',
        percent(get('view.heldShare')),
        'past the extrapolation cap, or before the first frames',
        'view.heldShare',
      ],
      [
        'guessed outside outages',
        percent(get('view.steadyGuessedShare')),
        `extrapolated + held, leaving out the first ${STEADY_AFTER_MS / 1000} s and each profile event with the ${OUTAGE_RECOVERY_MS / 1000} s after it`,
        'view.steadyGuessedShare',
      ],
      [
        'mean view age',
        fixed(get('view.meanAgeMs'), 0, ' ms'),
        "how far in the past remote players are drawn: the server's present when the client drew minus the view's server time, sampled each second",
        'view.meanAgeMs',
      ],
    ],
  ]);
  groups.push([
    'commands and lag compensation',
    [
      ['commands executed', count(get('commands.executed')), '', 'commands.executed'],
      ['commands lost', count(get('commands.lost')), 'every packet carrying them lost', 'commands.lost'],
      [
        'lost ones filled in',
        count(get('commands.filled')),
        'run as the command before them (fillLostMs): the player kept moving',
        'commands.filled',
      ],
      [
        'copies after their loss',
        count(get('commands.late')),
        'a copy came after its command was skipped as lost: the reorder window was too short',
        'commands.late',
      ],
      [
        'commands over budget',
        count(get('commands.overBudget')),
        'dropped by the time budget',
        'commands.overBudget',
      ],
      [
        'views honoured exactly',
        count(get('lagCompensation.exactViews')),
        'per command that could fire',
        'lagCompensation.exactViews',
      ],
      [
        'views refused',
        count(get('lagCompensation.viewsRefused')),
        `estimate used: ${count(get('lagCompensation.viewsRefusedByRule'))} by the view rule, ${count(get('lagCompensation.viewsNotSent'))} frames not sent or forgotten, ${count(get('lagCompensation.viewsPastUnlag'))} past maxUnlagMs + lateArrivalMs`,
        'lagCompensation.viewsRefused',
      ],
      [
        'claimed newest frame raised',
        count(get('lagCompensation.newestRaised')),
        'older than its packet acknowledged',
        'lagCompensation.newestRaised',
      ],
      [
        'estimates older than maxUnlagMs',
        count(get('lagCompensation.tooOld')),
        'clamped',
        'lagCompensation.tooOld',
      ],
      [
        'clients connected at the end',
        count(get('clients.connectedAtEnd')),
        `of ${count(get('bots'))}`,
        'clients.connectedAtEnd',
      ],
    ],
  ]);
  groups.push([
    "server's snapshot encode cache",
    [
      [
        'entries shared',
        percent(get('snapshotCache.reusedShare')),
        `snapshot entries copied from the encode cache, encoded by another client's frame this tick; ${count(get('snapshotCache.encoded'))} encoded into it, ${count(get('snapshotCache.uncached'))} encoded for one frame (the entity's 16 slots or the tick's bytes full)`,
        'snapshotCache.reusedShare',
      ],
    ],
  ]);
  groups.push([
    'server tick time (real clock: differs from run to run, even with the same seed)',
    [
      [
        'p50',
        fixed(get('serverTickMs.p50'), 3, ' ms'),
        `${count(get('server.ticks'))} ticks`,
        'serverTickMs.p50',
      ],
      ['p99', fixed(get('serverTickMs.p99'), 3, ' ms'), '', 'serverTickMs.p99'],
      ['max', fixed(get('serverTickMs.max'), 3, ' ms'), '', 'serverTickMs.max'],
      [
        'wall clock',
        fixed(get('wallClockSeconds'), 1, ' s'),
        `whole run: ${fixed(get('wallClockPerSimulatedSecond'), 2)} s per simulated second (below 1: faster than real time)`,
        'wallClockSeconds',
      ],
    ],
  ]);
  if (get('soak.samples') !== null) {
    groups.push([
      `soak (real clock and process memory): fitted after ${fixed(get('soak.warmUpSeconds'), 0, ' s')} of warm-up${result.soak?.allocator ? `; malloc: ${result.soak.allocator}` : ''}`,
      [
        [
          'heap used',
          `${fixed(get('soak.heapMBPerHour'), 2)} MB/h`,
          `slope ${plusMinus(get('soak.heapMBPerHour.error'), get('soak.heapMBPerHour.effectiveSamples'), get('soak.fittedSamples'))}; ${flatness(get('soak.heapMBPerHour'), get('soak.heapMBPerHour.error'))}; ${fixed(get('soak.heapMB.first'), 1)} MB then ${fixed(get('soak.heapMB.last'), 1)} MB`,
          'soak.heapMBPerHour',
        ],
        [
          '  of it, code',
          `${fixed(get('soak.codeMBPerHour'), 2)} MB/h`,
          `slope ± ${fixed(get('soak.codeMBPerHour.error'), 2)}; compiled code and bytecode (V8 compiles what runs first, or first runs hot, late in the run); ${fixed(get('soak.codeMB.first'), 2)} MB then ${fixed(get('soak.codeMB.last'), 2)} MB`,
          'soak.codeMBPerHour',
        ],
        [
          '  the rest, data',
          `${fixed(get('soak.dataMBPerHour'), 2)} MB/h`,
          `slope ${plusMinus(get('soak.dataMBPerHour.error'), get('soak.dataMBPerHour.effectiveSamples'), get('soak.fittedSamples'))}; ${flatness(get('soak.dataMBPerHour'), get('soak.dataMBPerHour.error'))}; the heap less its code: where a leak shows; ${fixed(get('soak.dataMB.first'), 1)} MB then ${fixed(get('soak.dataMB.last'), 1)} MB`,
          'soak.dataMBPerHour',
        ],
        [
          'resident set',
          `${fixed(get('soak.rssMBPerHour'), 2)} MB/h`,
          `slope ${plusMinus(get('soak.rssMBPerHour.error'), get('soak.rssMBPerHour.effectiveSamples'), get('soak.fittedSamples'))}; ${flatness(get('soak.rssMBPerHour'), get('soak.rssMBPerHour.error'))}; ${fixed(get('soak.rssMB.first'), 1)} MB then ${fixed(get('soak.rssMB.last'), 1)} MB`,
          'soak.rssMBPerHour',
        ],
        [
          '  of it, heap held',
          `${fixed(get('soak.heapCommittedMBPerHour'), 2)} MB/h`,
          `slope ± ${fixed(get('soak.heapCommittedMBPerHour.error'), 2)}; what V8 holds for its heap, used or kept for later`,
          'soak.heapCommittedMBPerHour',
        ],
        [
          '  buffers',
          `${fixed(get('soak.externalMBPerHour'), 2)} MB/h`,
          `slope ± ${fixed(get('soak.externalMBPerHour.error'), 2)}; the backing stores of typed arrays and native buffers`,
          'soak.externalMBPerHour',
        ],
        [
          '  the rest',
          `${fixed(get('soak.nativeMBPerHour'), 2)} MB/h`,
          `slope ± ${fixed(get('soak.nativeMBPerHour.error'), 2)}; stacks, the allocator's own heap, mapped files; ${fixed(get('soak.nativeMB.first'), 1)} MB then ${fixed(get('soak.nativeMB.last'), 1)} MB`,
          'soak.nativeMBPerHour',
        ],
        [
          '    mapped files',
          `${fixed(get('soak.fileMBPerHour'), 2)} MB/h`,
          `slope ± ${fixed(get('soak.fileMBPerHour.error'), 2)}; the program's and libraries' pages, read in as the run first touches them (bounded by their size); ${fixed(get('soak.fileMB.first'), 1)} MB then ${fixed(get('soak.fileMB.last'), 1)} MB`,
          'soak.fileMBPerHour',
        ],
        [
          '    anonymous',
          `${fixed(get('soak.anonymousMBPerHour'), 2)} MB/h`,
          `slope ${plusMinus(get('soak.anonymousMBPerHour.error'), get('soak.anonymousMBPerHour.effectiveSamples'), get('soak.fittedSamples'))}; ${flatness(get('soak.anonymousMBPerHour'), get('soak.anonymousMBPerHour.error'))}; the allocator's heap, stacks: what a native leak would grow; V8's own peak from the allocator ${fixed(get('soak.peakMallocedMB.first'), 1)} MB then ${fixed(get('soak.peakMallocedMB.last'), 1)} MB`,
          'soak.anonymousMBPerHour',
        ],
        [
          'heap by space',
          '',
          Object.keys(f)
            .filter((k) => k.startsWith('soak.heapSpaceMBPerHour.') && !k.endsWith('.error'))
            .filter((k) => get(k) !== null && Math.abs(get(k) as number) >= 0.005)
            .map(
              (k) =>
                `${k.slice('soak.heapSpaceMBPerHour.'.length)} ${fixed(get(k), 2)} ± ${fixed(get(`${k}.error`), 2)}`,
            )
            .join(', ') || 'every space within 0.005 MB/h',
          'soak.heapSpaceMBPerHour.*',
        ],
        ['tick p50', `${fixed(get('soak.tickP50MsPerHour'), 3)} ms/h`, 'slope', 'soak.tickP50MsPerHour'],
        [
          'tick p99',
          `${fixed(get('soak.tickP99MsPerHour'), 3)} ms/h`,
          `slope; ${count(get('soak.fittedSamples'))} of ${count(get('soak.samples'))} samples fitted`,
          'soak.tickP99MsPerHour',
        ],
      ],
    ]);
  }
  let labelWidth = 0;
  let valueWidth = 0;
  let detailWidth = 0;
  for (const [, rows] of groups) {
    for (const [label, value, detail] of rows) {
      labelWidth = Math.max(labelWidth, label.length);
      valueWidth = Math.max(valueWidth, value.length);
      detailWidth = Math.max(detailWidth, detail.length);
    }
  }
  const lines: string[] = [];
  for (const [title, rows] of groups) {
    lines.push('', title);
    for (const [label, value, detail, name] of rows) {
      lines.push(
        `  ${label.padEnd(labelWidth)}  ${value.padStart(valueWidth)}  ${detail.padEnd(detailWidth)}  ${name}`,
      );
    }
  }
  return lines.join('\n');
}

/**
 * "± E (standard error, samples worth M independent of N)" of a fitted slope, or why it has none
 * (too few samples, or samples so alike they are worth two or fewer).
 */
function plusMinus(error: Figure, effective: Figure, fitted: Figure): string {
  if (typeof error !== 'number') {
    return typeof effective === 'number' && typeof fitted === 'number' && fitted > 2
      ? `(no error: the samples are too alike, worth ${effective.toFixed(1)} independent of ${fitted})`
      : '(no error: too few samples)';
  }
  const worth =
    typeof effective === 'number' && typeof fitted === 'number'
      ? `, samples worth ${effective.toFixed(0)} independent of ${fitted}`
      : '';
  return `± ${error.toFixed(2)} (standard error${worth})`;
}

/** Whether a fitted slope is 0 within its noise: within two standard errors of 0. */
function flatness(slope: Figure, error: Figure): string {
  if (typeof slope !== 'number' || typeof error !== 'number') return 'flatness unknown';
  return Math.abs(slope) <= 2 * error
    ? 'flat within noise (|slope| <= 2 errors)'
    : 'not flat (|slope| > 2 errors)';
}
