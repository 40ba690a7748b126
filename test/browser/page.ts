// The browser test page: connects to the server that served it over WebRTC (src/browser.ts), plays the arena with a GameClient for a while, and reports through window.backstep.

import { BUTTON_JUMP } from '../../games/arena/shared/constants.ts';
import { arenaGame } from '../../games/arena/shared/game.ts';
import { type BrowserEndpoint, connectBrowser, WebRtcClientEndpoint } from '../../src/browser.ts';
import { createInputSample, GameClient } from '../../src/client/client.ts';

/** What the page reports to the test. */
export interface PageReport {
  phase: 'connecting' | 'playing' | 'done' | 'failed';
  error: string;
  transport: string;
  state: string;
  slot: number;
  framesReceived: number;
  /** Snapshots decoded. */
  snapshotsRead: number;
  commandsSent: number;
  corrections: number;
  /** Acknowledged states equal to the prediction (no replay needed). */
  confirmations: number;
  packetsSent: number;
  packetsReceived: number;
}

declare global {
  interface Window {
    backstep: PageReport;
  }
}

const report: PageReport = {
  phase: 'connecting',
  error: '',
  transport: '',
  state: '',
  slot: -1,
  framesReceived: 0,
  snapshotsRead: 0,
  commandsSent: 0,
  corrections: 0,
  confirmations: 0,
  packetsSent: 0,
  packetsReceived: 0,
};
window.backstep = report;

const params = new URLSearchParams(location.search);
const playMs = Number(params.get('playMs') ?? '2000');
const url = params.get('url') ?? `webrtc://${location.host}`;

function play(endpoint: BrowserEndpoint): void {
  report.transport = endpoint instanceof WebRtcClientEndpoint ? 'webrtc' : 'websocket';
  report.phase = 'playing';
  const client = new GameClient(arenaGame, endpoint, endpoint.serverAddress, { seed: 17 });
  const input = createInputSample();
  const start = performance.now();
  client.connect(start);
  let connectedAt = -1;
  const timer = setInterval(() => {
    const now = performance.now();
    const t = now - start;
    input.forwardMove = Math.floor(t / 400) % 2 === 0 ? 127 : -127;
    input.sideMove = Math.floor(t / 700) % 3 === 0 ? 127 : 0;
    input.yaw = (input.yaw + 1) % 360;
    input.buttons = Math.floor(t / 900) % 4 === 0 ? BUTTON_JUMP : 0;
    client.update(now, input);
    if (client.state === 'connected' && connectedAt < 0) connectedAt = now;
    report.state = client.state;
    report.slot = client.slot;
    report.framesReceived = client.stats.framesReceived;
    report.snapshotsRead = client.snapshots.stats.framesRead;
    report.commandsSent = client.stats.commandsSent;
    report.corrections = client.predictor.stats.corrections;
    report.confirmations = client.predictor.stats.confirmations;
    report.packetsSent = endpoint.stats.packetsSent;
    report.packetsReceived = endpoint.stats.packetsReceived;
    const ended =
      client.state !== 'connecting' && client.state !== 'challenged' && client.state !== 'connected';
    if (ended || (connectedAt >= 0 && now - connectedAt >= playMs)) {
      clearInterval(timer);
      const endedAs = client.state;
      client.disconnect();
      report.state = client.state;
      void endpoint.close().then(() => {
        report.phase = ended ? 'failed' : 'done';
        if (ended) report.error = `client ${endedAs} (endpoint ${JSON.stringify(endpoint.stats)})`;
      });
    }
  }, 8);
}

connectBrowser(url, { connectTimeoutMs: 10_000 }).then(play, (error: unknown) => {
  report.phase = 'failed';
  report.error = String(error);
});
