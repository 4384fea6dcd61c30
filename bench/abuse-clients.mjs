// The abusers of `bench/abuse.ts`, in their own process so that the gateway's descriptors and
// memory are its own: `node bench/abuse-clients.mjs PORT KEY IDLE SLOW_HEADER SLOW_BODY FLOOD`.
// Each kind keeps its count of connections open, opening a new one when the server closes one:
// IDLE sends one request then stays idle (keep-alive; reopened ones send nothing), SLOW_HEADER sends a header byte a
// second, SLOW_BODY promises 100,000 body bytes and sends 10 a second, FLOOD sends 60 header
// lines of 1 KB (more than uWS takes) and reconnects when closed. Prints one JSON line a
// second: connections open and closed by the server, per kind. Ends on SIGTERM.
import { connect } from 'node:net';

const [port, key, ...counts] = process.argv.slice(2);
const [idleN, slowHeaderN, slowBodyN, floodN] = counts.map(Number);
const chat = JSON.stringify({ model: 'demo', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
const request = (extra = '') => `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\n${extra}content-length: ${chat.length}\r\n\r\n${chat}`;
const flood = Array.from({ length: 60 }, (_, i) => `x-f${i}: ${'v'.repeat(1_000)}\r\n`).join('');
const kinds = {
  idle: { n: idleN, first: () => request(), drip: null },
  slow_header: { n: slowHeaderN, first: () => 'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n', drip: () => 'x' },
  slow_body: { n: slowBodyN, first: () => `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n`, drip: () => '0123456789' },
  flood: { n: floodN, first: () => request(flood), drip: null },
};
const stats = Object.fromEntries(Object.keys(kinds).map((k) => [k, { open: 0, closedByServer: 0, answered: 0 }]));
const live = new Set();
let stopping = false;
function openOne(kind, again = false) {
  const k = kinds[kind];
  const s = connect(Number(port), '127.0.0.1');
  live.add(s);
  s.on('error', () => undefined);
  s.on('data', () => void stats[kind].answered++);
  s.on('connect', () => {
    stats[kind].open++;
    // An idle connection reopened after the server closed it stays silent: only the first one
    // of each sends its request (a reopened one with a request is well-behaved load).
    if (!(again && kind === 'idle')) s.write(k.first());
  });
  s.on('close', () => {
    live.delete(s);
    if (stopping) return;
    stats[kind].open = Math.max(0, stats[kind].open - 1);
    stats[kind].closedByServer++;
    setTimeout(() => openOne(kind, true), 50);
  });
  if (k.drip) s.drip = k.drip;
}
// Opened 200 at a time, so the kernel's accept queue is not the bottleneck measured.
const all = Object.entries(kinds).flatMap(([kind, k]) => Array.from({ length: k.n }, () => kind));
let i = 0;
const opener = setInterval(() => {
  for (let j = 0; j < 200 && i < all.length; j++) openOne(all[i++]);
  if (i >= all.length) clearInterval(opener);
}, 20);
setInterval(() => {
  for (const s of live) if (s.drip && !s.destroyed) s.write(s.drip());
  console.log(JSON.stringify(stats));
}, 1_000);
process.on('SIGTERM', () => {
  stopping = true;
  for (const s of live) s.destroy();
  setTimeout(() => process.exit(0), 100);
});
