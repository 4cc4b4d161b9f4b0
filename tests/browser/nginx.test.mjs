// The demo page opened through nginx over TLS (deploy/nginx/pushonce.conf, run privately by
// deploy/nginx/private-nginx.sh with a self-signed certificate): redis-server, a leader, a
// worker and two `pushonce-gateway --dev-auth` behind nginx. The gateway holding the page's
// session is killed; the page resumes through nginx on the other one, and nothing arrives
// twice or goes missing. And the gate (location /checkout/): a user who opens the checkout
// without an admission lands in the waiting room, is admitted, and the page's Continue sets
// the gate's cookie and takes them back to the checkout, which receives their headers; once
// the admission is released the checkout sends them back to the waiting room.
// Environment as in waiting_room.test.mjs.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import crypto from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { ARTIFACTS, BIN_DIR, CHROMIUM, CHROMIUM_ARGS, GATEWAY, LEADER, REDIS_SERVER, ROOT, WORKER, children, freePort, loadChromium, sleep, waitFor } from './harness.mjs';

const NAMESPACE = `ponginx${process.pid}`;
const CHECKOUT_APP = `
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({k: self.headers.get(k, '') for k in
            ('X-Pushonce-User', 'X-Pushonce-Resource', 'X-Pushonce-Admission')}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
`;
let checkoutPort;
const BROWSER_ARGS = [...CHROMIUM_ARGS, '--ignore-certificate-errors']; // the test's own self-signed certificate

const { chromium, skipReason: noBrowser } = await loadChromium();
let skipReason = noBrowser;
if (!skipReason && !['/usr/sbin/nginx', '/usr/bin/nginx'].some((p) => fs.existsSync(p))) skipReason = 'nginx is not installed';


let tmpDir;
let logDir;
let redisUrl;

const stackEnv = () => ({ ...process.env, PUSHONCE_REDIS: redisUrl, PUSHONCE_NAMESPACE: NAMESPACE, PUSHONCE_LOG_LEVEL: 'info' });
function startProcess(name, file, args, env = stackEnv()) {
  const fd = fs.openSync(path.join(logDir, `nginx-test-${name}.log`), 'a');
  const child = spawn(file, args, { env, stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  child.exited = once(child, 'exit');
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}
async function stopProcess(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  await child.exited;
  clearTimeout(timer);
}
function leader(args) {
  return new Promise((resolve, reject) => {
    execFile(LEADER, args, { env: stackEnv(), timeout: 10000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`pushonce-leader ${args.join(' ')}: ${stderr.trim()}`));
      else resolve(args.includes('--json') ? JSON.parse(stdout) : stdout.trim());
    });
  });
}
async function httpOk(url) {
  const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
  return res.status === 200;
}
/** Sessions open on a gateway, from its /metrics. */
async function sessionsOn(port) {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const m = text.match(/^pushonce_gateway_sessions\{[^}]*\} (\d+)$/m);
  return m ? Number(m[1]) : -1;
}

describe('the demo page through nginx (TLS)', { skip: skipReason ?? false }, () => {
  let browser;
  let httpsBase;
  const gateways = []; // { port, child }

  before(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    logDir = path.join(ARTIFACTS, 'logs');
    fs.mkdirSync(logDir, { recursive: true });
    tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pushonce-browser-nginx-'));
    const launched = chromium.launch({ executablePath: CHROMIUM, headless: true, args: BROWSER_ARGS });
    const rport = await freePort();
    startProcess('redis', REDIS_SERVER, ['--port', String(rport), '--bind', '127.0.0.1', '--save', '',
      '--appendonly', 'no', '--dir', tmpDir], process.env);
    redisUrl = `redis://127.0.0.1:${rport}`;
    await sleep(200);
    // The admission key (the leader signs, the gateways verify at the gate).
    const { privateKey } = crypto.generateKeyPairSync('ec', {
      namedCurve: 'P-256', privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    const admissionKey = path.join(tmpDir, 'admission.pem');
    fs.writeFileSync(admissionKey, privateKey);
    startProcess('leader', LEADER, ['run', '--admission-key', admissionKey]);
    startProcess('worker', path.join(BIN_DIR, 'pushonce-worker'), ['--id', 'nginx-w1']);
    // The checkout behind the gate: answers with the X-Pushonce-* headers it received.
    checkoutPort = await freePort();
    startProcess('checkout', 'python3', ['-c', CHECKOUT_APP, String(checkoutPort)], process.env);
    for (const i of [0, 1]) {
      const port = await freePort();
      const child = startProcess(`gateway-${i}`, GATEWAY, ['--listen', `127.0.0.1:${port}`, '--dev-auth', '--id', `ngx-gw${i}`,
        '--admission-key', admissionKey]);
      gateways.push({ port, child });
      await waitFor(() => httpOk(`http://127.0.0.1:${port}/readyz`), { timeout: 10000, what: `gateway ${i} /readyz` });
    }
    const plain = await freePort();
    const tls = await freePort();
    const args = [path.join(ROOT, 'deploy/nginx/private-nginx.sh'), '--dir', path.join(tmpDir, 'nginx'),
      '--port', String(plain), '--tls-port', String(tls), '--checkout', `127.0.0.1:${checkoutPort}`];
    for (const g of gateways) args.push('--gateway', `127.0.0.1:${g.port}`);
    startProcess('nginx', 'bash', args, process.env);
    httpsBase = `https://127.0.0.1:${tls}`;
    await waitFor(() => httpOk(`http://127.0.0.1:${plain}/healthz`), { timeout: 10000, what: 'nginx' });
    await waitFor(async () => (await leader(['status', '--json'])).workers.length === 1, { timeout: 15000, what: 'the worker' });
    browser = await launched;
  });

  after(async () => {
    await browser?.close().catch(() => {});
    for (const c of [...children]) await stopProcess(c);
    if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true });
  });

  test('connect over TLS through nginx; the gateway dies; the page resumes on the other, once each',
    { timeout: 60000 }, async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      const received = [];
      page.on('websocket', (sock) => {
        assert.ok(sock.url().startsWith('wss://'), `WebSocket over TLS: ${sock.url()}`);
        sock.on('framereceived', ({ payload }) => {
          try { received.push(JSON.parse(String(payload))); } catch { /* not JSON */ }
        });
      });
      try {
        await page.goto(`${httpsBase}/`);
        await page.fill('#name', 'nina');
        await page.click('#connect');
        await page.waitForSelector('#state[data-state="open"]', { timeout: 10000 });
        const ids = [];
        for (const n of [1, 2, 3]) ids.push((await leader(['publish', 'nina', JSON.stringify({ n }), '--json'])).id);
        const logLen = () => page.$$eval('#log li', (lis) => lis.length);
        await waitFor(async () => (await logLen()) === 3, { timeout: 10000, what: '3 messages' });

        // kill the gateway that holds the session (nginx picked it)
        const counts = await Promise.all(gateways.map((g) => sessionsOn(g.port)));
        const victim = gateways[counts.indexOf(1)];
        assert.ok(victim, `one gateway has the session: ${counts}`);
        victim.child.kill('SIGKILL');
        await victim.child.exited;
        for (const n of [4, 5]) ids.push((await leader(['publish', 'nina', JSON.stringify({ n }), '--json'])).id);
        await page.waitForSelector('#state[data-state="open"]', { timeout: 15000 });
        await waitFor(async () => (await logLen()) >= 5, { timeout: 15000, what: '5 messages after the resume' });
        await sleep(500); // room for a duplicate to show up
        const log = await page.$$eval('#log li', (lis) => lis.map((li) => ({ id: li.dataset.id, offset: Number(li.dataset.offset) })).reverse());
        assert.deepEqual(log.map((e) => e.offset), [1, 2, 3, 4, 5]);
        assert.deepEqual(log.map((e) => e.id).sort(), [...ids].sort());
        const frames = received.filter((f) => f.type === 'message').map((f) => f.id);
        assert.deepEqual(frames.sort(), [...ids].sort(), 'each message frame once on the wire');
        const welcomes = received.filter((f) => f.type === 'welcome');
        assert.ok(welcomes.length >= 2 && welcomes.at(-1).recovered === true, 'resumed with since');
        const other = gateways.find((g) => g !== victim);
        assert.equal(await sessionsOn(other.port), 1, 'the session is on the other gateway');
        await page.screenshot({ path: path.join(ARTIFACTS, 'nginx-tls-resumed.png') });
      } finally {
        await context.close().catch(() => {});
      }
    });

  test('the gate: the checkout sends the user to the waiting room and takes them back admitted',
    { timeout: 60000 }, async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      const urls = [];
      page.on('request', (r) => { if (r.isNavigationRequest()) urls.push(r.url()); });
      try {
        // No admission: the checkout redirects to the waiting room, with where to come back.
        await page.goto(`${httpsBase}/checkout/pay`);
        assert.equal(new URL(page.url()).pathname, '/');
        assert.equal(new URL(page.url()).searchParams.get('return'), '/checkout/pay');
        await page.fill('#name', 'gus');
        await page.click('#connect');
        await page.waitForSelector('#state[data-state="open"]', { timeout: 10000 });
        await page.waitForSelector('#join:not([disabled])');
        await page.click('#join');
        await leader(['resource', 'add', 'seat-7']);
        await page.waitForSelector('#gate-continue:not([hidden])', { timeout: 10000 });
        await page.screenshot({ path: path.join(ARTIFACTS, 'gate-admitted.png') });
        await page.click('#gate-continue');
        await page.waitForURL(`${httpsBase}/checkout/pay`, { timeout: 10000 });
        const seen = JSON.parse(await page.textContent('body'));
        assert.equal(seen['X-Pushonce-User'], 'gus');
        assert.equal(seen['X-Pushonce-Resource'], 'seat-7');
        assert.match(seen['X-Pushonce-Admission'], /^\d+$/);
        assert.ok(urls.every((u) => !/eyJ/.test(u)), `the token never in a URL: ${urls}`);
        const cookies = await context.cookies();
        const gateCookie = cookies.find((c) => c.name === 'pushonce_admission');
        assert.ok(gateCookie?.httpOnly, 'an HttpOnly cookie');
        assert.equal(gateCookie.sameSite, 'Lax');

        // The admission is released: within about a second the checkout refuses the cookie,
        // a page is sent back to the waiting room and a fetch gets the JSON 403.
        await leader(['admission', 'release', seen['X-Pushonce-Admission']]);
        let refused = null;
        await waitFor(async () => {
          refused = await page.evaluate(async () => {
            const r = await fetch('/checkout/pay', { headers: { Accept: 'application/json' } });
            return { status: r.status, body: await r.text() };
          });
          return refused.status === 403;
        }, { timeout: 5000, what: 'the checkout refusing the released admission' });
        assert.equal(JSON.parse(refused.body).error, 'forbidden');
        await page.goto(`${httpsBase}/checkout/pay`);
        assert.equal(new URL(page.url()).pathname, '/');
        assert.equal(new URL(page.url()).searchParams.get('return'), '/checkout/pay');
      } finally {
        await context.close().catch(() => {});
      }
    });
});
