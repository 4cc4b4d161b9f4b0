// Proof of work at join on the demo page, in Debian's Chromium through playwright-core,
// against a real stack started here (redis-server, leader, worker, a --dev-auth gateway):
// the queue asks for join_pow_bits, the page's client solves the welcome's challenge in
// Web Workers (SubtleCrypto), shows its progress and joins; the join carried a solution.
//
// With PUSHONCE_POW_BENCH=1 it also measures how long the page takes to solve challenges
// of 16, 20 and 22 bits (PUSHONCE_POW_TRIALS each, default 5) and prints the figures
// (docs/operations.md, "Proof of work at join").
//
// Environment: PUSHONCE_BIN_DIR, PUSHONCE_ARTIFACTS, REDIS_SERVER, PUSHONCE_CHROMIUM as for
// waiting_room.test.mjs.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { ARTIFACTS, BIN_DIR, CHROMIUM, CHROMIUM_ARGS, GATEWAY, LEADER, REDIS_SERVER, ROOT, WORKER, children, freePort, loadChromium, sleep, waitFor } from './harness.mjs';

const NAMESPACE = `popow${process.pid}`;
const BITS = 14; // the test's difficulty: a fraction of a second

const { chromium, skipReason } = await loadChromium();


let tmpDir;
let logDir;
let redisPort;

function env() {
  return { ...process.env, PUSHONCE_REDIS: `redis://127.0.0.1:${redisPort}`, PUSHONCE_NAMESPACE: NAMESPACE, PUSHONCE_LOG_LEVEL: 'info' };
}

function startProcess(name, file, args, e = env()) {
  const fd = fs.openSync(path.join(logDir, `pow-${name}.log`), 'a');
  const child = spawn(file, args, { env: e, stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  child.exited = once(child, 'exit');
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

/** One Redis command over RESP (no client library needed). */
function redis(...words) {
  return new Promise((resolve, reject) => {
    const s = net.connect(redisPort, '127.0.0.1');
    let out = '';
    s.on('error', reject);
    s.on('connect', () => s.write(`*${words.length}\r\n${words.map((w) => `$${Buffer.byteLength(String(w))}\r\n${w}\r\n`).join('')}`));
    s.on('data', (d) => {
      out += d.toString();
      if (out.endsWith('\r\n')) {
        s.destroy();
        resolve(out);
      }
    });
  });
}

function leader(args) {
  return new Promise((resolve, reject) => {
    execFile(LEADER, args, { env: env(), timeout: 10000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`pushonce-leader ${args.join(' ')}: ${stderr}`));
      else resolve(args.includes('--json') ? JSON.parse(stdout) : stdout);
    });
  });
}

const leadingZeroBits = (buf) => {
  let n = 0;
  for (const b of buf) {
    if (b === 0) { n += 8; continue; }
    return n + Math.clz32(b) - 24;
  }
  return n;
};

describe('proof of work in a browser', { skip: skipReason ?? false }, () => {
  let browser;
  let base;

  before(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    logDir = path.join(ARTIFACTS, 'logs');
    fs.mkdirSync(logDir, { recursive: true });
    tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pushonce-pow-'));
    redisPort = await freePort();
    startProcess('redis', REDIS_SERVER, ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', tmpDir], process.env);
    await waitFor(async () => (await redis('PING')).startsWith('+PONG'), { timeout: 10000, what: 'redis' });
    startProcess('leader', LEADER, ['run']);
    startProcess('worker', WORKER, ['--id', 'pow-w1']);
    const port = await freePort();
    startProcess('gateway', GATEWAY, ['--listen', `127.0.0.1:${port}`, '--dev-auth', '--id', 'pow-gw']);
    base = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${base}/healthz`)).status === 200, { timeout: 10000, what: 'gateway' });
    await waitFor(async () => (await leader(['status', '--json'])).leader, { timeout: 10000, what: 'a leader' });
    await redis('HSET', `${NAMESPACE}:{q:default}:settings`, 'join_pow_bits', String(BITS));
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  });

  after(async () => {
    await browser?.close();
    for (const c of children) c.kill('SIGTERM');
    fs.rmSync(tmpDir, { recursive: true, force: true });
  });

  test('the demo page solves the challenge in Web Workers, shows its progress and joins', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const sent = [];
    const received = [];
    page.on('websocket', (ws) => {
      ws.on('framesent', ({ payload }) => sent.push(JSON.parse(payload)));
      ws.on('framereceived', ({ payload }) => received.push(JSON.parse(payload)));
    });
    const workers = [];
    page.on('worker', (w) => workers.push(w));
    page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
    await page.goto(base + '/');
    await page.fill('#name', 'powuser');
    await page.click('#connect');
    await page.waitForSelector('#state[data-state="open"]');
    const welcome = received.find((f) => f.type === 'welcome');
    assert.equal(welcome.challenge.bits, BITS);
    await page.click('#join');
    await page.waitForSelector('#pow[data-state="solved"]', { timeout: 60000 });
    await page.waitForFunction(() => document.querySelector('#position')?.textContent.trim() === 'You are #1 in line');
    assert.ok(workers.length >= 1, 'the solution was searched in a Web Worker');
    const join = sent.find((f) => f.op === 'join');
    assert.equal(join.pow.id, welcome.challenge.id);
    const digest = createHash('sha256').update(welcome.challenge.prefix + join.pow.nonce).digest();
    assert.ok(leadingZeroBits(digest) >= BITS);
    const text = await page.textContent('#pow');
    assert.match(text, /Proof of work solved/);
    await page.screenshot({ path: path.join(ARTIFACTS, 'pow-solved.png') });
    // The gateway checked it: a second join with the same solution would be refused; a
    // join without one is refused with a fresh challenge.
    assert.equal((await leader(['position', 'powuser', '--json'])).position, 1);
    await context.close();
  });

  test('solve times at 16, 20 and 22 bits (PUSHONCE_POW_BENCH=1)', { skip: process.env.PUSHONCE_POW_BENCH !== '1' }, async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(base + '/');
    const trials = Number(process.env.PUSHONCE_POW_TRIALS || 5);
    const cores = await page.evaluate(() => navigator.hardwareConcurrency);
    const rows = [];
    for (const bits of [16, 20, 22]) {
      const times = await page.evaluate(async ([b, n]) => {
        const { solvePow } = await import('/pushonce.js');
        const out = [];
        for (let i = 0; i < n; i++) {
          const prefix = `bench.${b}.${i}.${Math.random().toString(16).slice(2)}.`;
          const t = performance.now();
          let hashes = 0;
          await solvePow({ id: 'x', prefix, bits: b }, { onProgress: (p) => { hashes = p.hashes; } });
          out.push({ ms: performance.now() - t, hashes });
        }
        return out;
      }, [bits, trials]);
      const ms = times.map((t) => t.ms).sort((a, b) => a - b);
      const rate = times.reduce((a, t) => a + t.hashes, 0) / (times.reduce((a, t) => a + t.ms, 0) / 1000);
      rows.push({ bits, median_ms: Math.round(ms[Math.floor(ms.length / 2)]), mean_ms: Math.round(ms.reduce((a, b) => a + b, 0) / ms.length), max_ms: Math.round(ms.at(-1)), hashes_per_s: Math.round(rate) });
    }
    console.log(`proof of work in Chromium (${cores} cores, ${trials} trials each):`);
    for (const r of rows) console.log(JSON.stringify(r));
    await context.close();
  });
});
