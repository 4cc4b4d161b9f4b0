#!/usr/bin/env node
// The latency floor of a load generator on this machine (the peer's `load/loadgen.mjs`,
// the Node.js + Socket.IO comparison kept outside this repository): a stand-in "system"
// that does nothing but forward. It speaks just enough of docs/protocol.md for the load
// generator: WebSocket /ws (hello → welcome, then message
// frames) on every --listen port, and POST /api/publish on the first, answering one id
// per message and pushing each message at once, from memory, to every connection of its
// user on every port. No Redis, no dedup, no second process: whatever latency the load
// generator reports against it is the harness's own cost (its JSON, its event loop, the
// kernel's loopback), the part of any system's figure that no system can remove.
//
//   node tests/bench/harness_floor.mjs --listen 127.0.0.1:18080,127.0.0.1:18081
//   node PEER_DIR/load/loadgen.mjs --target pushonce \
//        --servers 127.0.0.1:18080,127.0.0.1:18081 --api-key x --rate 6500 --messages 30000
// Needs the `ws` package: run from a directory whose node_modules has it, or set
// NODE_PATH (bench_floor.sh does both).
import http from 'node:http';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';

const require = createRequire(import.meta.url);
const { WebSocketServer } = require('ws');

const { values: opts } = parseArgs({
  options: { listen: { type: 'string', default: '127.0.0.1:18080,127.0.0.1:18081' } },
});
const listens = opts.listen.split(',').map((hp) => {
  const i = hp.lastIndexOf(':');
  return { host: hp.slice(0, i), port: Number(hp.slice(i + 1)) };
});

const byUser = new Map(); // user → { offset, conns: Set<ws> }
let nextId = 1;
const entry = (user) => {
  let e = byUser.get(user);
  if (!e) byUser.set(user, (e = { offset: 0, conns: new Set() }));
  return e;
};

function publish(req, res) {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString());
    } catch {
      res.writeHead(400).end('{"error":"bad_request"}');
      return;
    }
    const single = !Array.isArray(body.messages);
    const messages = single ? [body] : body.messages;
    const ts = Date.now();
    const results = messages.map((m) => {
      const id = String(nextId++);
      const e = entry(String(m.user));
      e.offset += 1;
      const frame = JSON.stringify({ type: 'message', id, offset: e.offset, kind: 'message', data: m.data, ts });
      for (const ws of e.conns) ws.send(frame);
      return { id };
    });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(single ? results[0] : { results }));
  });
}

for (const [i, l] of listens.entries()) {
  const server = http.createServer((req, res) => {
    if (req.method === 'POST' && req.url === '/api/publish' && i === 0) return publish(req, res);
    if (req.url === '/healthz') return res.writeHead(200).end('{"status":"ok"}');
    res.writeHead(404).end();
  });
  const wss = new WebSocketServer({ server, path: '/ws' });
  wss.on('connection', (ws) => {
    let user = null;
    ws.on('message', (raw) => {
      let f;
      try {
        f = JSON.parse(raw.toString());
      } catch {
        return;
      }
      if (f.op === 'hello' && user === null && typeof f.user === 'string') {
        user = f.user;
        const e = entry(user);
        e.conns.add(ws);
        ws.send(JSON.stringify({ type: 'welcome', user, session: 's', epoch: 'e', offset: e.offset, recovered: true }));
      } else if (f.op === 'ping') {
        ws.send('{"type":"pong"}');
      }
    });
    ws.on('close', () => user !== null && entry(user).conns.delete(ws));
  });
  server.listen(l.port, l.host, () => process.stderr.write(`harness_floor: listening on ${l.host}:${l.port}\n`));
}
