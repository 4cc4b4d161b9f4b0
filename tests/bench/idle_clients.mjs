// One load-generator process of tests/bench/idle_connections.sh: opens --count WebSocket
// sessions to --url from --local-address (each process its own loopback source address,
// so one address's ~28k ephemeral ports and one process's descriptor limit do not cap the
// test), sends hello (--dev-auth user "<prefix><i>") and waits for welcome, at most
// --concurrency handshakes at a time. Prints one JSON line when done:
//   {"event":"connected","opened":N,"failed":F,"ms":T,"errors":{...}}
// then stays idle (answering the gateway's pings) until SIGTERM, and prints
//   {"event":"end","closed_by_server":C}
// `ws` is resolved from $WS_MODULE_DIR, a folder whose node_modules holds the `ws` package
// (idle_connections.sh sets it from its second argument).
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { join } from 'node:path';

const { values: o } = parseArgs({
  options: {
    url: { type: 'string' },
    count: { type: 'string', default: '1000' },
    'local-address': { type: 'string', default: '127.0.0.1' },
    concurrency: { type: 'string', default: '200' },
    prefix: { type: 'string', default: 'idle-' },
  },
});
if (!process.env.WS_MODULE_DIR) {
  console.error('idle_clients.mjs: set WS_MODULE_DIR to a folder whose node_modules holds ws');
  process.exit(2);
}
const require = createRequire(join(process.env.WS_MODULE_DIR, 'x.js'));
const { WebSocket } = require('ws');

const count = Number(o.count);
const concurrency = Number(o.concurrency);
const sockets = [];
const errors = {};
let opened = 0, failed = 0, closedByServer = 0, next = 0, done = false;
const t0 = performance.now();

function openOne(i) {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (ok, why) => {
      if (settled) return;
      settled = true;
      if (ok) opened++;
      else {
        failed++;
        errors[why] = (errors[why] || 0) + 1;
      }
      resolve();
    };
    const ws = new WebSocket(o.url, { localAddress: o['local-address'], perMessageDeflate: false });
    const timer = setTimeout(() => { finish(false, 'timeout'); ws.terminate(); }, 30000);
    ws.on('open', () => ws.send(JSON.stringify({ op: 'hello', user: `${o.prefix}${i}` })));
    ws.on('message', (data) => {
      if (!settled && JSON.parse(data.toString()).type === 'welcome') {
        clearTimeout(timer);
        sockets.push(ws);
        finish(true);
      }
    });
    ws.on('error', (e) => { clearTimeout(timer); finish(false, e.code || e.message); });
    ws.on('close', () => {
      clearTimeout(timer);
      if (settled && !done) closedByServer++;
      finish(false, 'closed');
    });
  });
}

async function worker() {
  while (next < count) await openOne(next++);
}
await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
console.log(JSON.stringify({ event: 'connected', opened, failed,
  ms: Math.round(performance.now() - t0), errors }));

process.on('SIGTERM', () => {
  done = true;
  console.log(JSON.stringify({ event: 'end', closed_by_server: closedByServer, open: opened - closedByServer }));
  for (const ws of sockets) ws.terminate();
  process.exit(0);
});
setInterval(() => {}, 1 << 30);
