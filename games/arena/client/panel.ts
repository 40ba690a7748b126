// The panel: live controls for this client's link and for each method of the paper. Down-link
// conditions are applied by the server to what it sends this client; up-link conditions here,
// to what this client sends. Every value is clamped to its range before it is used or sent.

import { LINK_SHAPE_LIMITS } from 'backstep/net';
import { type LagCompensationChoice, SETTINGS_LIMITS } from '../shared/messages.ts';

export interface PanelValues {
  downLatencyMs: number;
  downJitterMs: number;
  downLossPercent: number;
  downDuplicatePercent: number;
  upLatencyMs: number;
  upJitterMs: number;
  upLossPercent: number;
  upDuplicatePercent: number;
  prediction: boolean;
  interpolation: boolean;
  /** 0: the engine's default (max of 100 ms and two snapshot intervals). */
  interpolationDelay: number | 'adaptive';
  maxExtrapolationMs: number;
  lagCompensation: LagCompensationChoice;
  updateRate: number;
  rateBytesPerSecond: number;
}

export function defaultPanelValues(): PanelValues {
  return {
    downLatencyMs: 0,
    downJitterMs: 0,
    downLossPercent: 0,
    downDuplicatePercent: 0,
    upLatencyMs: 0,
    upJitterMs: 0,
    upLossPercent: 0,
    upDuplicatePercent: 0,
    prediction: true,
    interpolation: true,
    interpolationDelay: 0,
    maxExtrapolationMs: 100,
    lagCompensation: 'server',
    updateRate: 32,
    rateBytesPerSecond: 80_000,
  };
}

type NumberKey = { [K in keyof PanelValues]: PanelValues[K] extends number ? K : never }[keyof PanelValues];

const NUMBER_FIELDS: { key: NumberKey; label: string; min: number; max: number; step: number }[] = [
  { key: 'downLatencyMs', label: 'latency (ms)', ...LINK_SHAPE_LIMITS.latencyMs, step: 10 },
  { key: 'downJitterMs', label: 'jitter (± ms)', ...LINK_SHAPE_LIMITS.jitterMs, step: 5 },
  { key: 'downLossPercent', label: 'loss (%)', min: 0, max: 100, step: 1 },
  { key: 'downDuplicatePercent', label: 'duplicates (%)', min: 0, max: 100, step: 1 },
  { key: 'upLatencyMs', label: 'latency (ms)', ...LINK_SHAPE_LIMITS.latencyMs, step: 10 },
  { key: 'upJitterMs', label: 'jitter (± ms)', ...LINK_SHAPE_LIMITS.jitterMs, step: 5 },
  { key: 'upLossPercent', label: 'loss (%)', min: 0, max: 100, step: 1 },
  { key: 'upDuplicatePercent', label: 'duplicates (%)', min: 0, max: 100, step: 1 },
  { key: 'maxExtrapolationMs', label: 'extrapolation cap (ms)', min: 0, max: 1000, step: 10 },
  {
    key: 'updateRate',
    label: 'update rate (snapshots/s)',
    min: SETTINGS_LIMITS.updateRate.min,
    max: 64,
    step: 1,
  },
  {
    key: 'rateBytesPerSecond',
    label: 'rate (bytes/s)',
    ...SETTINGS_LIMITS.rateBytesPerSecond,
    step: 1000,
  },
];

function clamp(v: number, min: number, max: number): number {
  return Number.isFinite(v) ? Math.min(max, Math.max(min, v)) : min;
}

/** The panel's DOM; `onChange` gets the whole set of values after any change. */
export class Panel {
  readonly values: PanelValues = defaultPanelValues();
  private readonly root: HTMLElement;

  constructor(
    root: HTMLElement,
    private readonly onChange: (values: PanelValues) => void,
  ) {
    this.root = root;
    const section = (title: string, note: string) => {
      const h = document.createElement('h3');
      h.textContent = title;
      root.appendChild(h);
      if (note !== '') {
        const p = document.createElement('div');
        p.className = 'note';
        p.textContent = note;
        root.appendChild(p);
      }
    };
    section('Down link (server to you)', 'Applied by the server to what it sends you.');
    for (const f of NUMBER_FIELDS.slice(0, 4)) this.numberField(f);
    section('Up link (you to server)', 'Applied in this page to what it sends.');
    for (const f of NUMBER_FIELDS.slice(4, 8)) this.numberField(f);
    section('Methods', 'Each section of the paper, on and off.');
    this.checkbox('prediction', 'client-side prediction');
    this.checkbox('interpolation', 'interpolation (off: raw snapshots)');
    this.select(
      'interpolationDelay',
      'interpolation delay',
      [
        ['0', 'default (adaptive: 100 ms or 2 updates, more on a jittery link)'],
        ['adaptive', 'adaptive (jitter)'],
        ['50', '50 ms'],
        ['100', '100 ms'],
        ['200', '200 ms'],
        ['300', '300 ms'],
        ['500', '500 ms'],
      ],
      (v) => (v === 'adaptive' ? 'adaptive' : clamp(Number(v), 0, 1000)),
    );
    this.numberField(NUMBER_FIELDS[8]);
    this.select(
      'lagCompensation',
      'lag compensation (server)',
      [
        ['server', "server's default"],
        ['exact', 'exact (the view you drew)'],
        ['estimate', 'estimate (latency + lerp)'],
        ['off', 'off'],
      ],
      (v) => (['server', 'exact', 'estimate', 'off'].includes(v) ? (v as LagCompensationChoice) : 'server'),
    );
    this.numberField(NUMBER_FIELDS[9]);
    this.numberField(NUMBER_FIELDS[10]);
  }

  set visible(on: boolean) {
    this.root.hidden = !on;
  }

  get visible(): boolean {
    return !this.root.hidden;
  }

  private label(text: string, control: HTMLElement): void {
    const label = document.createElement('label');
    const span = document.createElement('span');
    span.textContent = text;
    label.append(span, control);
    this.root.appendChild(label);
  }

  private numberField(f: (typeof NUMBER_FIELDS)[number]): void {
    const input = document.createElement('input');
    input.type = 'number';
    input.id = `set-${f.key}`;
    input.min = String(f.min);
    input.max = String(f.max);
    input.step = String(f.step);
    input.value = String(this.values[f.key]);
    input.addEventListener('change', () => {
      const v = clamp(Number(input.value), f.min, f.max);
      input.value = String(v);
      this.values[f.key] = v;
      this.onChange(this.values);
    });
    this.label(f.label, input);
  }

  private checkbox(key: 'prediction' | 'interpolation', text: string): void {
    const input = document.createElement('input');
    input.type = 'checkbox';
    input.id = `set-${key}`;
    input.checked = this.values[key];
    input.addEventListener('change', () => {
      this.values[key] = input.checked;
      this.onChange(this.values);
    });
    this.label(text, input);
  }

  private select<K extends 'interpolationDelay' | 'lagCompensation'>(
    key: K,
    text: string,
    options: [string, string][],
    parse: (v: string) => PanelValues[K],
  ): void {
    const select = document.createElement('select');
    select.id = `set-${key}`;
    for (const [value, label] of options) {
      const option = document.createElement('option');
      option.value = value;
      option.textContent = label;
      select.appendChild(option);
    }
    select.value = String(this.values[key]);
    select.addEventListener('change', () => {
      this.values[key] = parse(select.value);
      this.onChange(this.values);
    });
    this.label(text, select);
  }
}
