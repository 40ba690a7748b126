// The sim's chart: a self-contained SVG of small multiples, the figures over time per bucket
// (bandwidth, corrections, hit agreement per mode, remote view, choke, server tick time).

import type { Figure, SeriesName } from './metrics.ts';
import { describeRun } from './report.ts';
import type { SimResult } from './runner.ts';

interface Line {
  series: SeriesName;
  label: string;
  color: string;
  /** Multiplies every value (100 for a share shown in percent). */
  scale: number;
}

interface Panel {
  title: string;
  unit: string;
  lines: Line[];
  /** Fixed y range, or null to fit the data (from 0). */
  yMax: number | null;
}

const PANEL_WIDTH = 560;
const PANEL_HEIGHT = 240;
const MARGIN = { left: 64, right: 16, top: 42, bottom: 44 };
const COLUMNS = 2;
const HEADER = 56;
const FONT = 'font-family="Helvetica, Arial, sans-serif"';
const COLORS = { blue: '#1f6fb4', orange: '#e0741b', green: '#2a9d3a', red: '#c8322f', grey: '#7a7a7a' };

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** About `count` round tick values (1, 2 or 5 times a power of ten apart) covering [0, max]. */
export function niceTicks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power;
  const ticks: number[] = [];
  for (let i = 0; i * step < max + step * 0.999; i++) ticks.push(i * step);
  return ticks;
}

function label(value: number): string {
  if (value === 0) return '0';
  if (Math.abs(value) >= 10_000) return `${Math.round(value / 1000)}k`;
  if (Math.abs(value) >= 1000) return `${(value / 1000).toFixed(1).replace(/\.0$/, '')}k`;
  if (Number.isInteger(value)) return String(value);
  return String(Number(value.toPrecision(3)));
}

function overall(result: SimResult, name: string): string {
  const v = result.figures[name];
  return v === null || v === undefined ? '' : ` ${(v * 100).toFixed(1)}%`;
}

function panels(result: SimResult): Panel[] {
  const decisive = result.options.lagCompensation;
  const mode = (m: string) =>
    `${m}${m === decisive ? ' (decides)' : ''}${overall(result, `hitAgreement.${m}`)}`;
  return [
    {
      title: 'Bandwidth per client',
      unit: 'bytes per second',
      yMax: null,
      lines: [
        { series: 'bytesPerClientPerSecond.down', label: 'down', color: COLORS.blue, scale: 1 },
        { series: 'bytesPerClientPerSecond.up', label: 'up', color: COLORS.orange, scale: 1 },
      ],
    },
    {
      title: 'Prediction corrections',
      unit: 'per minute per client',
      yMax: null,
      lines: [
        { series: 'prediction.correctionsPerMinute', label: 'corrections', color: COLORS.red, scale: 1 },
      ],
    },
    {
      title: 'Hit agreement per bucket (same rays, three modes)',
      unit: '% of rays',
      yMax: 100,
      lines: [
        { series: 'hitAgreement.exact', label: mode('exact'), color: COLORS.green, scale: 100 },
        { series: 'hitAgreement.estimate', label: mode('estimate'), color: COLORS.orange, scale: 100 },
        { series: 'hitAgreement.off', label: mode('off'), color: COLORS.red, scale: 100 },
      ],
    },
    {
      title: 'Remote players drawn beyond the history',
      unit: '% of client frames',
      yMax: null,
      lines: [
        { series: 'view.extrapolatedShare', label: 'extrapolated', color: COLORS.blue, scale: 100 },
        { series: 'view.heldShare', label: 'held', color: COLORS.red, scale: 100 },
      ],
    },
    {
      title: 'Choke: frames held back by the rate',
      unit: '% of frames due',
      yMax: null,
      lines: [{ series: 'choke.share', label: 'choke', color: COLORS.orange, scale: 100 }],
    },
    {
      title: 'Server tick time (real clock)',
      unit: 'ms per update',
      yMax: null,
      lines: [
        { series: 'serverTickMs.p50', label: 'p50', color: COLORS.grey, scale: 1 },
        { series: 'serverTickMs.p99', label: 'p99', color: COLORS.blue, scale: 1 },
      ],
    },
  ];
}

function drawPanel(result: SimResult, panel: Panel, x0: number, y0: number, xLabel: string): string {
  const t = result.series.t as Figure[];
  const half = result.bucketSeconds / 2;
  const xMax = Math.max(result.bucketSeconds, ...t.map((v) => v ?? 0));
  let dataMax = 0;
  for (const line of panel.lines) {
    for (const v of result.series[line.series])
      if (v !== null && v * line.scale > dataMax) dataMax = v * line.scale;
  }
  const yTicks = niceTicks(panel.yMax ?? dataMax);
  const yMax = yTicks[yTicks.length - 1];
  const xTicks = niceTicks(xMax, 6).filter((v) => v <= xMax + 1e-9);
  const w = PANEL_WIDTH - MARGIN.left - MARGIN.right;
  const h = PANEL_HEIGHT - MARGIN.top - MARGIN.bottom;
  const left = x0 + MARGIN.left;
  const top = y0 + MARGIN.top;
  const px = (v: number) => left + (v / xMax) * w;
  const py = (v: number) => top + h - (Math.min(v, yMax) / yMax) * h;
  const out: string[] = [];
  out.push(
    `<text x="${left}" y="${y0 + 16}" font-size="14" font-weight="bold" ${FONT}>${escapeXml(panel.title)}</text>`,
  );
  let legendX = left;
  for (const line of panel.lines) {
    out.push(
      `<rect x="${legendX}" y="${y0 + 24}" width="14" height="4" fill="${line.color}"/>`,
      `<text x="${legendX + 18}" y="${y0 + 30}" font-size="11" ${FONT}>${escapeXml(line.label)}</text>`,
    );
    legendX += 26 + line.label.length * 6.2;
  }
  for (const v of yTicks) {
    const y = py(v);
    out.push(
      `<line x1="${left}" y1="${y}" x2="${left + w}" y2="${y}" stroke="#e4e4e4"/>`,
      `<text x="${left - 6}" y="${y + 4}" font-size="11" text-anchor="end" ${FONT}>${label(v)}</text>`,
    );
  }
  for (const v of xTicks) {
    const x = px(v);
    out.push(
      `<line x1="${x}" y1="${top + h}" x2="${x}" y2="${top + h + 4}" stroke="#444"/>`,
      `<text x="${x}" y="${top + h + 17}" font-size="11" text-anchor="middle" ${FONT}>${label(v)}</text>`,
    );
  }
  out.push(
    `<rect x="${left}" y="${top}" width="${w}" height="${h}" fill="none" stroke="#444"/>`,
    `<text x="${left + w / 2}" y="${top + h + 34}" font-size="11" text-anchor="middle" ${FONT}>${escapeXml(xLabel)}</text>`,
    `<text transform="translate(${x0 + 14} ${top + h / 2}) rotate(-90)" font-size="11" text-anchor="middle" ${FONT}>${escapeXml(panel.unit)}</text>`,
  );
  for (const line of panel.lines) {
    const values = result.series[line.series];
    let d = '';
    let pen = false;
    let points = 0;
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      const ti = t[i];
      if (v === null || ti === null) {
        pen = false;
        continue;
      }
      d += `${pen ? 'L' : 'M'}${px(Math.max(0, ti - half)).toFixed(1)} ${py(v * line.scale).toFixed(1)}`;
      pen = true;
      points++;
    }
    if (points === 0) continue;
    out.push(
      `<path d="${d}" fill="none" stroke="${line.color}" stroke-width="1.6" stroke-linejoin="round"/>`,
    );
    if (points === 1) {
      const m = /M([\d.]+) ([\d.]+)/.exec(d);
      if (m) out.push(`<circle cx="${m[1]}" cy="${m[2]}" r="2.5" fill="${line.color}"/>`);
    }
  }
  return out.join('\n');
}

/** The whole chart as an SVG document. */
export function renderChart(result: SimResult): string {
  const list = panels(result);
  const rows = Math.ceil(list.length / COLUMNS);
  const width = PANEL_WIDTH * COLUMNS;
  const height = HEADER + PANEL_HEIGHT * rows;
  const xLabel = `${result.options.transport === 'memory' ? 'simulated' : 'real'} time (s), ${result.bucketSeconds} s buckets`;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="16" y="24" font-size="15" font-weight="bold" ${FONT}>Backstep sim</text>`,
    `<text x="16" y="44" font-size="11" ${FONT}>${escapeXml(describeRun(result.options).replace(/^Backstep sim: /, ''))}</text>`,
  ];
  list.forEach((panel, i) => {
    const x0 = (i % COLUMNS) * PANEL_WIDTH;
    const y0 = HEADER + Math.floor(i / COLUMNS) * PANEL_HEIGHT;
    parts.push(drawPanel(result, panel, x0, y0, xLabel));
  });
  parts.push('</svg>', '');
  return parts.join('\n');
}
