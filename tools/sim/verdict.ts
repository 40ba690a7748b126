// Whether a sim run is a bad one: each figure past its threshold is flagged with the likely
// cause, so a 47 % run never prints like any other. `--strict` makes a flagged run exit 1.

import type { Figure } from './metrics.ts';
import type { SimResult } from './runner.ts';

/** One figure past its threshold, and what most likely put it there. */
export interface Flag {
  figure: string;
  value: number;
  threshold: string;
  cause: string;
}

/**
 * Share of frames drawn from guesses (extrapolated or held) that is flagged, outside outages
 * (view.steadyGuessedShare: the start and each profile event with the second after it left out).
 */
export const GUESSED_VIEW_LIMIT = 0.01;

/** The flags of a run's figures (empty: nothing to say). */
export function judgeRun(result: SimResult): Flag[] {
  const f = result.figures;
  const get = (name: string): Figure => (Object.hasOwn(f, name) ? f[name] : null);
  const flags: Flag[] = [];
  const deciding = result.options.lagCompensation;
  const agreement = get(`hitAgreement.${deciding}`);
  const refused = get('lagCompensation.viewsRefused') ?? 0;
  const byRule = get('lagCompensation.viewsRefusedByRule') ?? 0;
  const unforeseen = refused - byRule;
  if (agreement !== null && agreement < 1) {
    const onHonoured = get('disagreements.honoured') ?? 0;
    flags.push({
      figure: `hitAgreement.${deciding}`,
      value: agreement,
      threshold: '100 %',
      cause:
        onHonoured > 0
          ? `${onHonoured} rays disagree on views the server honoured: the client and the server rebuilt different worlds for the same named view (a bug)`
          : unforeseen > 0
            ? `the server refused ${unforeseen} named views the client expected it to honour (frames not sent or forgotten, or older than maxUnlagMs + lateArrivalMs in server time): the command took longer to arrive than the client could know (a latency spike after it was sent, a queue building)`
            : 'rays disagree on views refused by the rule the client also runs (a bug in what the client shows)',
    });
  } else if (refused > 0) {
    flags.push({
      figure: 'lagCompensation.viewsRefused',
      value: refused,
      threshold: '0',
      cause: `${byRule} views refused by the view acceptance rule (the client knew and showed no hit), ${unforeseen} for frames forgotten or older than maxUnlagMs + lateArrivalMs: the view fell behind the newest frame (a stall, latency spikes) or the link queued`,
    });
  }
  const unjudgedHits = get('shots.unjudgedHitsShown') ?? 0;
  if (unjudgedHits > 0) {
    flags.push({
      figure: 'shots.unjudgedHitsShown',
      value: unjudgedHits,
      threshold: '0',
      cause: `hits shown on the shooters' screens for ${get('shots.unjudged') ?? 0} shooting commands the server never ran: every copy of the command was lost on the up-link (an outage longer than the server waits for a missing command)`,
    });
  }
  const steady = get('view.steadyGuessedShare');
  const guessed = steady ?? (get('view.extrapolatedShare') ?? 0) + (get('view.heldShare') ?? 0);
  if (guessed > GUESSED_VIEW_LIMIT) {
    flags.push({
      figure: steady === null ? 'view.extrapolatedShare + view.heldShare' : 'view.steadyGuessedShare',
      value: guessed,
      threshold: `${GUESSED_VIEW_LIMIT * 100} %`,
      cause:
        'remote players drawn from guesses outside outages: snapshots arrive further apart than the interpolation delay covers (loss, jitter, choke); try a larger --interp-delay',
    });
  }
  const steadyChoke = get('choke.steadyShare');
  const choke = steadyChoke ?? get('choke.share');
  if (choke !== null && choke > 0) {
    flags.push({
      figure: steadyChoke === null ? 'choke.share' : 'choke.steadyShare',
      value: choke,
      threshold: '0 %',
      cause:
        'the rate held frames back: snapshots need more bytes per second than the rate (--rate) or the link allows',
    });
  }
  return flags;
}

/** The flags as lines for the report (none when the run is clean). */
export function formatFlags(flags: readonly Flag[]): string {
  if (flags.length === 0) return '\nverdict: no figure past its threshold';
  const lines = flags.map((g) => {
    const shown = g.threshold.endsWith('%') ? `${(g.value * 100).toFixed(2)} %` : String(g.value);
    return `  ${g.figure} = ${shown} (threshold ${g.threshold}): ${g.cause}`;
  });
  return `\nverdict: ${flags.length} figure${flags.length === 1 ? '' : 's'} flagged\n${lines.join('\n')}`;
}
