// The attacker's socket for the UDP tools, in its own process, so that sending costs the server's
// process nothing. Two modes:
// - 'start' (the connect flood, connect-flood.ts): sends the connect requests it is given, round
//   robin from `sockets` sockets on 127.0.0.1, at `rate` a second, until told to stop;
// - 'relay' (the UDP storm, storm.ts): sends from one socket each datagram of the batches it is
//   given (the storm makes them, from the traffic it sees).
// Either way it reports what it sent when told to stop. Plain JavaScript, so it starts without a
// TypeScript loader.

import dgram from 'node:dgram';

let packets = [];
let sent = 0;
let failed = 0;
let timer = null;
let relayPort = 0;
let relayInFlight = 0;
const sockets = [];

process.on('message', async (m) => {
  if (m.type === 'start') {
    packets = m.packets.map((b) => Buffer.from(b, 'base64'));
    for (let i = 0; i < m.sockets; i++) {
      const s = dgram.createSocket({ type: 'udp4', sendBufferSize: 4 << 20 });
      await new Promise((resolve) => s.bind(0, '127.0.0.1', resolve));
      sockets.push(s);
    }
    const t0 = performance.now();
    let next = 0;
    let inFlight = 0;
    timer = setInterval(() => {
      const due = Math.floor(((performance.now() - t0) * m.rate) / 1000);
      // Never more than a few thousand waiting in libuv: past that the machine, not the rate, is the limit.
      while (sent + failed < due && inFlight < 4096) {
        const s = sockets[next % sockets.length];
        const p = packets[next % packets.length];
        next++;
        inFlight++;
        s.send(p, m.port, '127.0.0.1', (error) => {
          inFlight--;
          if (error) failed++;
        });
        sent++;
      }
      // Behind by more than a second: skip it (a flood does not catch up).
      if (due - sent - failed > m.rate) failed += due - sent - failed - m.rate;
    }, 2);
    process.send({ type: 'started', at: performance.now() });
  } else if (m.type === 'relay') {
    const s = dgram.createSocket({ type: 'udp4', sendBufferSize: 4 << 20 });
    await new Promise((resolve) => s.bind(0, '127.0.0.1', resolve));
    sockets.push(s);
    relayPort = m.port;
    process.send({ type: 'started', at: performance.now() });
  } else if (m.type === 'batch') {
    // bytes: the datagrams one after another; lengths: each one's length.
    const bytes = Buffer.from(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength);
    let at = 0;
    for (const length of m.lengths) {
      relayInFlight++;
      sockets[0].send(bytes.subarray(at, at + length), relayPort, '127.0.0.1', (error) => {
        relayInFlight--;
        if (error) failed++;
      });
      at += length;
      sent++;
    }
  } else if (m.type === 'stop') {
    if (timer !== null) clearInterval(timer);
    // Every datagram handed over leaves before the count (at most 2 s).
    const until = performance.now() + 2000;
    while (relayInFlight > 0 && performance.now() < until)
      await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setTimeout(resolve, 50));
    for (const s of sockets) s.close();
    process.send({ type: 'stopped', sent: sent - failed });
    process.disconnect();
  }
});
