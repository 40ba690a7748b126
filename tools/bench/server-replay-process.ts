// The child process of the server tick benchmark's replay (server-replay.ts): builds the bench
// scene's server, replays the recording it is sent and sends back the timed updates.

import { replayServerPasses, type ServerReplayJob } from './server-replay.ts';
import { sceneServer } from './server-tick.ts';

process.once('message', (message) => {
  const job = message as ServerReplayJob;
  try {
    const result = replayServerPasses(
      job.recording,
      (endpoint) => sceneServer(job.scene, job.bots, endpoint),
      job.passes,
      job.ownBuffers === true,
    );
    process.send?.({ result });
  } catch (e) {
    process.send?.({ error: e instanceof Error ? e.message : String(e) });
  }
});
