// net_graph drawn on a 2D canvas (Source's net_graph 3): the figures as text and a scrolling
// plot of recent packets, one bar per packet (height: its size; blue in, orange out) and a line
// of the round trip of each acknowledged sent packet.

import { type NetGraphFigures, PACKET_IN, type PacketHistory } from 'backstep/client';

const WIDTH = 360;
const PLOT_HEIGHT = 70;
const TEXT_LINES = 7;
const LINE = 14;

function fixed(v: number, digits = 0): string {
  return Number.isFinite(v) ? v.toFixed(digits) : '-';
}

function percent(share: number): string {
  return `${fixed(share * 100, share > 0 && share < 0.1 ? 1 : 0)}%`;
}

export class NetGraphView {
  readonly canvas: HTMLCanvasElement;
  private readonly g: CanvasRenderingContext2D;
  /** The text lines as last drawn (read by tests). */
  lines: string[] = [];

  constructor(parent: HTMLElement) {
    this.canvas = document.createElement('canvas');
    this.canvas.id = 'net-graph';
    this.canvas.width = WIDTH;
    this.canvas.height = PLOT_HEIGHT + TEXT_LINES * LINE + 10;
    parent.appendChild(this.canvas);
    this.g = this.canvas.getContext('2d') as CanvasRenderingContext2D;
  }

  set visible(on: boolean) {
    this.canvas.style.display = on ? 'block' : 'none';
  }

  get visible(): boolean {
    return this.canvas.style.display !== 'none';
  }

  draw(
    nowMs: number,
    f: NetGraphFigures,
    packets: PacketHistory,
    transport: string,
    updateRate: number,
    rate: number,
  ): void {
    const g = this.g;
    const h = this.canvas.height;
    g.clearRect(0, 0, WIDTH, h);
    g.fillStyle = 'rgba(0, 0, 0, 0.55)';
    g.fillRect(0, 0, WIDTH, h);
    // The plot: the last 2 seconds, newest at the right.
    const spanMs = 2000;
    const maxBytes = 600;
    const maxRtt = 500;
    let previousX = -1;
    let previousY = 0;
    for (let n = packets.oldest; n < packets.total; n++) {
      const i = packets.indexOf(n);
      const age = nowMs - packets.timeMs[i];
      if (age > spanMs || age < 0) continue;
      const x = WIDTH - 4 - (age / spanMs) * (WIDTH - 8);
      const size = Math.min(1, packets.bytes[i] / maxBytes) * (PLOT_HEIGHT - 6);
      const incoming = packets.direction[i] === PACKET_IN;
      g.fillStyle = incoming ? '#4aa3ff' : '#ff9a3c';
      g.fillRect(x, PLOT_HEIGHT - size, 2, size);
      const rtt = packets.rttMs[i];
      if (!incoming && !Number.isNaN(rtt)) {
        const y = PLOT_HEIGHT - Math.min(1, rtt / maxRtt) * (PLOT_HEIGHT - 6);
        g.strokeStyle = '#ffffff';
        if (previousX >= 0) {
          g.beginPath();
          g.moveTo(previousX, previousY);
          g.lineTo(x, y);
          g.stroke();
        }
        previousX = x;
        previousY = y;
      }
    }
    this.lines = [
      `fps ${fixed(f.fps)}  (${fixed(f.frameMs, 1)} ms)   ping ${fixed(f.pingMs)} ms   ${transport}`,
      `in  ${fixed(f.inBytesPerSecond)} B/s  ${fixed(f.inPacketsPerSecond)} pkt/s   loss ${percent(f.lossIn)}`,
      `out ${fixed(f.outBytesPerSecond)} B/s  ${fixed(f.outPacketsPerSecond)} pkt/s   loss ${percent(f.lossOut)}`,
      `choke ${percent(f.choke)}   updaterate ${updateRate}/s   rate ${rate} B/s`,
      `lerp ${fixed(f.interpolationDelayMs)} ms   extrapolated ${percent(f.extrapolatedShare)}   held ${percent(f.heldShare)}`,
      `prediction errors ${f.predictionErrors} (${f.predictionErrorsInWindow}/s)  mean ${fixed(f.predictionErrorMean, 1)}  max ${fixed(f.predictionErrorMax, 1)} u`,
      `server tick ${fixed(f.serverTickMs, 2)} ms   snapshots ${fixed(f.snapshotsPerSecond)}/s`,
    ];
    g.font = '12px monospace';
    g.fillStyle = '#e8f0e0';
    for (let k = 0; k < this.lines.length; k++) g.fillText(this.lines[k], 6, PLOT_HEIGHT + 16 + k * LINE);
  }
}
