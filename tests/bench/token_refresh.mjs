#!/usr/bin/env node
// Token refresh under load (docs/benchmarks.md "Token refresh"): N sessions of the real
// browser client (gateway/web/pushonce.js, Node's WebSocket), one user each, every one with
// a `token` function minting HS256 tokens of TTL seconds, so each refreshes on its own at
// about 80 % of the lifetime; meanwhile RATE messages/s go to random users through
// POST /api/publish. After DURATION seconds publishing stops, the sessions get DRAIN
// seconds to receive the rest, and it prints one JSON object: refreshes done and refused,
// sessions closed (by code and reason; "token expired" must be 0), reconnects, and per
// message the deliveries seen on the wire (a duplicate: an offset received twice by one
// session; a loss: a published message whose offset never arrived).
//
//   node --experimental-websocket tests/bench/token_refresh.mjs --gateway 127.0.0.1:8080 \
//     --sessions 10000 --ttl 60 --duration 600 --rate 200
// Environment: PUSHONCE_JWT_SECRET (the gateway's), PUSHONCE_API_KEY (for /api/publish).
import crypto from 'node:crypto';
import { parseArgs } from 'node:util';
import { PushonceClient } from '../../gateway/web/pushonce.js';

const { values: o } = parseArgs({
  options: {
    gateway: { type: 'string', default: '127.0.0.1:8080' },
    sessions: { type: 'string', default: '10000' },
    ttl: { type: 'string', default: '60' },
    duration: { type: 'string', default: '600' },
    rate: { type: 'string', default: '200' },
    drain: { type: 'string', default: '5' },
    'connect-rate': { type: 'string', default: '500' },
    prefix: { type: 'string', default: `tr${process.pid}-` },
    progress: { type: 'boolean', default: false },
  },
});
const N = Number(o.sessions), TTL = Number(o.ttl), DURATION = Number(o.duration);
const RATE = Number(o.rate), DRAIN = Number(o.drain), CONNECT_RATE = Number(o['connect-rate']);
const secret = process.env.PUSHONCE_JWT_SECRET, apiKey = process.env.PUSHONCE_API_KEY;
if (!secret || !apiKey) throw new Error('PUSHONCE_JWT_SECRET and PUSHONCE_API_KEY are needed');
if (typeof WebSocket !== 'function') throw new Error('run with node --experimental-websocket');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const b64url = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

function mint(sub) {
  const now = Math.floor(Date.now() / 1000);
  const head = `${b64url({ alg: 'HS256', typ: 'JWT' })}.${b64url({ sub, iat: now, exp: now + TTL })}`;
  return `${head}.${crypto.createHmac('sha256', secret).update(head).digest('base64url')}`;
}

const stats = {
  opened: 0, refreshed: 0, refresh_errors: 0, other_errors: 0, reconnects: 0,
  closes: {}, // "code reason" -> count
  token_expired_closes: 0,
};
// Per session: offsets received on the wire (a Map offset -> times) and messages published.
const sessions = [];

// The WebSocket the client is given: the same, plus a count of every message frame on the wire.
function countingWebSocket(rec) {
  return class extends WebSocket {
    constructor(url) {
      super(url);
      this.addEventListener('message', (e) => {
        if (typeof e.data !== 'string' || !e.data.includes('"message"')) return;
        const f = JSON.parse(e.data);
        if (f.type === 'message') rec.offsets.set(f.offset, (rec.offsets.get(f.offset) ?? 0) + 1);
      });
    }
  };
}

const url = `ws://${o.gateway}/ws`;
for (let i = 0; i < N; i++) {
  const user = `${o.prefix}${i}`;
  const rec = { user, offsets: new Map(), published: 0, client: null, everOpen: false };
  const client = new PushonceClient({
    url, token: () => mint(user), WebSocket: countingWebSocket(rec), ackIntervalMs: 1000,
  });
  client.on('state', (state, detail) => {
    if (state === 'open') {
      if (rec.everOpen) stats.reconnects++;
      else stats.opened++;
      rec.everOpen = true;
    } else if (detail?.code && rec.everOpen) {
      const key = `${detail.code} ${detail.reason ?? ''}`.trim();
      stats.closes[key] = (stats.closes[key] ?? 0) + 1;
      if (detail.reason === 'token expired') stats.token_expired_closes++;
    }
  });
  client.on('refreshed', () => stats.refreshed++);
  client.on('error', (e) => (e.op === 'refresh' ? stats.refresh_errors++ : stats.other_errors++));
  rec.client = client;
  sessions.push(rec);
}

const t0 = Date.now();
for (let i = 0; i < N; i++) {
  sessions[i].client.connect();
  if (i % Math.max(1, Math.floor(CONNECT_RATE / 20)) === 0) await sleep(50);
}
while (stats.opened < N && Date.now() - t0 < 120_000) await sleep(100);
const connectS = (Date.now() - t0) / 1000;
if (o.progress) console.error(`opened ${stats.opened}/${N} in ${connectS.toFixed(1)} s`);

// Publish RATE messages/s to random users for DURATION seconds, in batches of 10 per 50 ms tick.
const start = Date.now();
let published = 0, publishErrors = 0, nextLine = start + 10_000;
while (Date.now() - start < DURATION * 1000) {
  const due = Math.floor(((Date.now() - start) / 1000) * RATE) - published;
  if (due > 0) {
    const batch = [];
    for (let k = 0; k < Math.min(due, 1000); k++) {
      const rec = sessions[Math.floor(Math.random() * N)];
      batch.push({ rec, msg: { user: rec.user, data: { n: published + k } } });
    }
    try {
      const res = await fetch(`http://${o.gateway}/api/publish`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ messages: batch.map((b) => b.msg) }),
      });
      if (res.status === 200) for (const b of batch) b.rec.published++;
      else publishErrors++;
      await res.arrayBuffer();
    } catch {
      publishErrors++;
    }
    published += batch.length;
  }
  if (o.progress && Date.now() >= nextLine) {
    nextLine += 10_000;
    console.error(`${Math.round((Date.now() - start) / 1000)} s: published ${published}, refreshed ${stats.refreshed}, ` +
      `refresh errors ${stats.refresh_errors}, token expired ${stats.token_expired_closes}, reconnects ${stats.reconnects}`);
  }
  await sleep(50);
}
await sleep(DRAIN * 1000);

let lost = 0, duplicates = 0, delivered = 0, publishedOk = 0;
for (const rec of sessions) {
  publishedOk += rec.published;
  for (let off = 1; off <= rec.published; off++) {
    const n = rec.offsets.get(off) ?? 0;
    if (n === 0) lost++;
    else delivered++;
    if (n > 1) duplicates += n - 1;
  }
  for (const [off, n] of rec.offsets) if (off > rec.published) duplicates += n; // never published
}
const result = {
  sessions: N, ttl_s: TTL, duration_s: DURATION, rate: RATE, connect_s: connectS,
  opened: stats.opened, refreshed: stats.refreshed, refresh_errors: stats.refresh_errors,
  other_errors: stats.other_errors, token_expired_closes: stats.token_expired_closes,
  reconnects: stats.reconnects, closes: { ...stats.closes },
  published: publishedOk, publish_errors: publishErrors, delivered, lost, duplicates,
};
for (const rec of sessions) rec.client.close();
console.log(JSON.stringify(result));
await sleep(200);
process.exit(lost || duplicates || stats.token_expired_closes || stats.opened < N ? 1 : 0);
