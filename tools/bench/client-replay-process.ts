// The child process of the client frame benchmark's replays (client-replay.ts): replays the
// recordings it is sent and sends back the timed frames.

import { type ReplayData, replayRecordings } from './client-replay.ts';

process.once('message', (data) => {
  process.send?.(replayRecordings(data as ReplayData));
});
