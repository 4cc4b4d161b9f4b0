// The demo page (gateway/web/index.html + pushonce.js) and the operator page (admin.html)
// in Debian's Chromium, driven by playwright-core, against a real stack started here:
// redis-server, `pushonce-leader run --accept-timeout 2`, two workers and a
// `pushonce-gateway --dev-auth` (plus, for the JWT scenario, one without --dev-auth).
//
// Environment: tests/browser/harness.mjs.
// Screenshots (1280×800) go to PUSHONCE_ARTIFACTS/<state>.png, the programs' output to
// PUSHONCE_ARTIFACTS/logs/, and a failing test leaves failure-<test>-<n>.png behind.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { once } from 'node:events';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { ARTIFACTS, BIN_DIR, CHROMIUM, CHROMIUM_ARGS, GATEWAY, LEADER, REDIS_SERVER, ROOT, WORKER, children, freePort, loadChromium, sleep, waitFor } from './harness.mjs';


const VIEWPORT = { width: 1280, height: 800 };
const ACCEPT_TIMEOUT_S = 2;
const JWT_SECRET = 'browser-test-jwt-secret-0123456789';
const ADMIN_TOKEN = 'browser-test-admin-token';
const NAMESPACE = `pobrowser${process.pid}`;

// Skip (rather than fail) when the browser pieces are not installed on this machine.
const { chromium, skipReason } = await loadChromium();

// ---- small helpers ----------------------------------------------------------------------

// ---- the stack ----------------------------------------------------------------------------
let tmpDir;
let redisUrl;
let logDir;

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => process.exit(130)); // runs the 'exit' handler above
}

function stackEnv(over = {}) {
  return {
    ...process.env,
    PUSHONCE_REDIS: redisUrl,
    PUSHONCE_NAMESPACE: NAMESPACE,
    PUSHONCE_JWT_SECRET: JWT_SECRET,
    PUSHONCE_ADMIN_TOKEN: ADMIN_TOKEN,
    PUSHONCE_LOG_LEVEL: 'info',
    ...over,
  };
}

/** Starts a long-running program; its stdout and stderr go to logs/<name>.log. */
function startProcess(name, file, args, env = stackEnv()) {
  const fd = fs.openSync(path.join(logDir, `${name}.log`), 'a');
  const child = spawn(file, args, { env, stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  child.label = name;
  child.exited = once(child, 'exit');
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

async function stopProcess(child, { signal = 'SIGTERM', graceMs = 3000 } = {}) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await child.exited;
  clearTimeout(timer);
}

/** Runs `pushonce-leader ARGS...`; with --json returns the parsed object, else the text. */
function leader(args, { env = stackEnv(), allowFail = false } = {}) {
  return new Promise((resolve, reject) => {
    execFile(LEADER, args, { env, timeout: 10000 }, (err, stdout, stderr) => {
      if (err && !allowFail) {
        reject(new Error(`pushonce-leader ${args.join(' ')} failed (${err.code}): ${stderr.trim()} ${stdout.trim()}`));
        return;
      }
      resolve(args.includes('--json') ? JSON.parse(stdout) : stdout.trim());
    });
  });
}

async function startRedis() {
  const port = await freePort();
  const redis = startProcess('redis', REDIS_SERVER, [
    '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
    '--dir', tmpDir, '--daemonize', 'no',
  ], process.env);
  await waitFor(() => new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => resolve(false));
    s.on('connect', () => s.write('PING\r\n'));
    s.on('data', (d) => {
      s.destroy();
      resolve(d.toString().startsWith('+PONG'));
    });
  }), { timeout: 10000, what: 'redis-server to answer PING' });
  redisUrl = `redis://127.0.0.1:${port}`;
  return redis;
}

async function startGateway(name, port, extra = []) {
  const gw = startProcess(name, GATEWAY, ['--listen', `127.0.0.1:${port}`, '--threads', '2', '--id', name, ...extra]);
  await waitFor(async () => {
    if (gw.exitCode !== null) throw new Error(`${name} exited with ${gw.exitCode}`);
    const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1000) });
    return res.status === 200;
  }, { timeout: 10000, what: `${name} /healthz` });
  return gw;
}

// ---- the browser ----------------------------------------------------------------------------
let browser;
const livePages = []; // the pages of the running test (for failure screenshots)

// Runs in every page before its scripts: records the #state badge's changes and the first
// time #card shows (in Date.now() time, comparable with the test's own clock).
function pageProbe() {
  window.__states = [];
  window.__cardShownAt = null;
  document.addEventListener('DOMContentLoaded', () => {
    const state = document.getElementById('state');
    if (state) {
      new MutationObserver(() => window.__states.push(state.dataset.state))
        .observe(state, { attributes: true, attributeFilter: ['data-state'] });
    }
    const card = document.getElementById('card');
    if (card) {
      new MutationObserver(() => {
        if (!card.hidden && window.__cardShownAt === null) window.__cardShownAt = Date.now();
      }).observe(card, { attributes: true, attributeFilter: ['hidden'] });
    }
  });
}

/**
 * A fresh browser context with one page on baseUrl + pathname. `ws` records what the page's
 * WebSockets did: how many were opened, and every frame sent/received (parsed, with time).
 */
async function openPage(name, baseUrl, pathname = '/') {
  const context = await browser.newContext({ viewport: VIEWPORT });
  const page = await context.newPage();
  await page.addInitScript(pageProbe);
  const ws = { opened: 0, sent: [], received: [] };
  page.on('websocket', (sock) => {
    ws.opened++;
    const conn = ws.opened;
    const parse = (payload) => {
      try {
        return JSON.parse(typeof payload === 'string' ? payload : payload.toString());
      } catch {
        return { unparsed: String(payload) };
      }
    };
    sock.on('framesent', ({ payload }) => ws.sent.push({ at: Date.now(), conn, frame: parse(payload) }));
    sock.on('framereceived', ({ payload }) => ws.received.push({ at: Date.now(), conn, frame: parse(payload) }));
  });
  page.on('pageerror', (e) => console.error(`[${name}] page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) console.error(`[${name}] console: ${m.text()}`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400 && r.status() !== 401 && !r.url().endsWith('/favicon.ico')) console.error(`[${name}] HTTP ${r.status()} ${r.url()}`);
  });
  await page.goto(baseUrl + pathname);
  const entry = { name, context, page, ws };
  livePages.push(entry);
  return entry;
}

async function closePages() {
  for (const p of livePages.splice(0)) await p.context.close().catch(() => {});
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`) });
}

/** Wraps a test body: on failure, screenshots every open page; always closes them. */
function scenario(name, body) {
  return async (t) => {
    try {
      await body(t);
    } catch (e) {
      let n = 0;
      for (const p of livePages) {
        await p.page.screenshot({ path: path.join(ARTIFACTS, `failure-${name}-${++n}-${p.name}.png`) }).catch(() => {});
      }
      throw e;
    } finally {
      await closePages();
    }
  };
}

// ---- page actions ----------------------------------------------------------------------------
const stateOf = (page) => page.getAttribute('#state', 'data-state');

async function waitState(page, state, timeout = 10000) {
  await page.waitForSelector(`#state[data-state="${state}"]`, { timeout });
}

async function waitText(page, selector, text, timeout = 5000) {
  await page.waitForFunction(
    ([sel, want]) => document.querySelector(sel)?.textContent.trim() === want,
    [selector, text],
    { timeout, polling: 'raf' },
  );
}

/** Enters a dev-auth name (or a token), connects, and waits for the state to be open. */
async function connectAs(page, { name, token }) {
  if (name) await page.fill('#name', name);
  if (token) await page.fill('#token', token);
  await page.click('#connect');
  await waitState(page, 'open');
}

async function joinQueue(page, expectedPosition) {
  await page.waitForSelector('#join:not([disabled])');
  await page.click('#join');
  await waitText(page, '#position', `You are #${expectedPosition} in line`);
}

/** The rows of the message log, oldest first. */
function logEntries(page) {
  return page.$$eval('#log li', (lis) => lis.map((li) => ({
    id: li.dataset.id, offset: Number(li.dataset.offset), kind: li.dataset.kind,
  })).reverse());
}

const cardVisible = (page) => page.$eval('#card', (c) => !c.hidden);

// ---- the tests -------------------------------------------------------------------------------
describe('waiting room in a browser', { skip: skipReason ?? false }, () => {
  let base; // http://127.0.0.1:<port> of the --dev-auth gateway
  let admissionKey; // the leader's --admission-key
  let gatewayPort;
  let gateway;

  before(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pushonce-browser-'));
    logDir = path.join(ARTIFACTS, 'logs');
    fs.mkdirSync(logDir, { recursive: true });
    for (const f of fs.readdirSync(logDir)) fs.rmSync(path.join(logDir, f), { force: true });
    for (const f of fs.readdirSync(ARTIFACTS)) if (f.startsWith('failure-')) fs.rmSync(path.join(ARTIFACTS, f));

    const launched = chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    await startRedis();
    // An admission key: the leader signs each assignment's token, the gateway publishes
    // the public half at /.well-known/jwks.json.
    const { privateKey } = crypto.generateKeyPairSync('ec', {
      namedCurve: 'P-256',
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    admissionKey = path.join(tmpDir, 'admission.pem');
    fs.writeFileSync(admissionKey, privateKey, { mode: 0o600 });
    startProcess('leader', LEADER, ['run', '--accept-timeout', String(ACCEPT_TIMEOUT_S), '--admission-key', admissionKey]);
    startProcess('worker-1', WORKER, ['--id', 'browser-w1']);
    startProcess('worker-2', WORKER, ['--id', 'browser-w2']);
    gatewayPort = await freePort();
    gateway = await startGateway('gateway', gatewayPort, ['--dev-auth', '--admission-key', admissionKey]);
    base = `http://127.0.0.1:${gatewayPort}`;
    await waitFor(async () => {
      const s = await leader(['status', '--json']);
      return s.leader && s.workers.length === 2;
    }, { timeout: 15000, what: 'an active leader and 2 workers in `status`' });
    browser = await launched;
  });

  after(async () => {
    await closePages();
    await browser?.close().catch(() => {});
    const order = [...children].sort((a, b) => (a.label === 'redis') - (b.label === 'redis')); // redis last
    for (const c of order.filter((c) => c.label !== 'redis')) await stopProcess(c);
    for (const c of order.filter((c) => c.label === 'redis')) await stopProcess(c);
    if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true });
  });

  test('assignment: card within 1 s, exactly once; the next user moves up without polling; accept holds',
    { timeout: 30000 }, scenario('assignment', async () => {
      const ann = await openPage('ann', base);
      const bob = await openPage('bob', base);
      await connectAs(ann.page, { name: 'ann' });
      await connectAs(bob.page, { name: 'bob' });
      await joinQueue(ann.page, 1);
      await joinQueue(bob.page, 2);
      await shot(ann.page, 'waiting-ann');
      await shot(bob.page, 'waiting-bob');

      const addedAt = Date.now();
      const added = await leader(['resource', 'add', 'room-1', '--json']);
      const returnedAt = Date.now();
      assert.deepEqual(added.added, ['room-1']);

      await ann.page.waitForFunction(() => window.__cardShownAt !== null, null, { timeout: 5000 });
      const shownAt = await ann.page.evaluate(() => window.__cardShownAt);
      const latency = shownAt - returnedAt;
      console.log(`# card shown ${latency} ms after \`resource add\` returned (${shownAt - addedAt} ms after it started)`);
      assert.ok(latency < 1000, `the card took ${latency} ms after the CLI returned`);
      assert.equal(await ann.page.textContent('#card-resource'), 'room-1');
      assert.equal(await ann.page.textContent('#card-status'), 'assigned');
      await shot(ann.page, 'assigned-ann');

      // Accept well before the 2 s deadline.
      await ann.page.click('#accept');
      await waitText(ann.page, '#card-status', 'accepted');
      await shot(ann.page, 'accepted-ann');

      // bob moves to #1 by a pushed position frame: his page sends no position op after the add.
      await waitText(bob.page, '#position', 'You are #1 in line');
      const polls = bob.ws.sent.filter((s) => s.at >= addedAt && s.frame.op === 'position');
      assert.equal(polls.length, 0, `bob's page polled: ${JSON.stringify(polls)}`);
      const pushed = bob.ws.received.filter((r) => r.at >= addedAt && r.frame.type === 'position');
      assert.ok(pushed.some((r) => r.frame.position === 1), 'a position frame with position 1 was pushed to bob');
      await shot(bob.page, 'position-bob');

      // Past the deadline the card is still accepted, the resource is still ann's and bob got nothing.
      const { card } = await ann.page.evaluate(() => JSON.parse(sessionStorage.getItem('pushonce-demo')));
      assert.equal(typeof card.acceptBy, 'number', 'the assignment carries accept_by');
      const acceptWindow = card.acceptBy - shownAt;
      assert.ok(acceptWindow > 1000 && acceptWindow <= ACCEPT_TIMEOUT_S * 1000 + 500, `accept_by is ${acceptWindow} ms out`);
      await sleep(Math.max(0, card.acceptBy + 1000 - Date.now())); // the scenario needs the deadline to pass
      assert.equal(await ann.page.textContent('#card-status'), 'accepted');
      const annLog = await logEntries(ann.page);
      assert.deepEqual(annLog.map((e) => e.kind), ['assignment'], 'exactly one message: the assignment');
      assert.equal(ann.ws.received.filter((r) => r.frame.type === 'message').length, 1, 'one message frame reached ann');
      assert.equal(await cardVisible(bob.page), false, 'bob got no card');
      assert.equal((await logEntries(bob.page)).length, 0);
      await waitText(bob.page, '#position', 'You are #1 in line');
      const { resources } = await leader(['resource', 'list', '--json']);
      assert.deepEqual(resources.map((r) => [r.id, r.state, r.user]), [['room-1', 'assigned', 'ann']]);

      // Leave the queue empty for the next scenario (and exercise Leave).
      await bob.page.click('#leave');
      await waitText(bob.page, '#position', 'Not in line');
      assert.equal((await leader(['queue', '--json'])).length, 0);
    }));

  test('expiry: an offer not accepted in 2 s expires and goes to the next user',
    { timeout: 30000 }, scenario('expiry', async () => {
      const carol = await openPage('carol', base);
      const dave = await openPage('dave', base);
      await connectAs(carol.page, { name: 'carol' });
      await connectAs(dave.page, { name: 'dave' });
      await joinQueue(carol.page, 1);
      await joinQueue(dave.page, 2);

      await leader(['resource', 'add', 'room-2', '--json']);
      await carol.page.waitForSelector('#card:not([hidden])', { timeout: 5000 });
      const offeredAt = await carol.page.evaluate(() => window.__cardShownAt);
      assert.equal(await carol.page.textContent('#card-resource'), 'room-2');
      assert.equal(await carol.page.textContent('#card-status'), 'assigned');
      // The offer's countdown shows in the card.
      assert.equal(await carol.page.isVisible('#card-countdown'), true);
      assert.match(await carol.page.textContent('#card-countdown'), /^0:0[0-2]$/);
      await shot(carol.page, 'assigned-carol');
      await waitText(dave.page, '#position', 'You are #1 in line');
      // The estimated wait next to the position: "about N min", or nothing when the
      // gateway has no pace to go by yet.
      const daveEta = (await dave.page.textContent('#eta')).trim();
      assert.ok((await dave.page.isHidden('#eta')) ? daveEta === '' : /^about \d+ min$/.test(daveEta),
        `estimated wait: "${daveEta}"`);

      // carol does nothing: the gateway's `expired` message settles her card.
      await carol.page.waitForSelector('#log li[data-kind="expired"]', { timeout: 8000 });
      const expiredAt = Date.now();
      await waitText(carol.page, '#card-status', 'expired');
      await waitText(carol.page, '#position', 'Not in line');
      assert.equal(await carol.page.isHidden('#eta'), true, 'no estimated wait out of line');
      const waited = expiredAt - offeredAt;
      console.log(`# carol's offer expired ${waited} ms after it was shown`);
      assert.ok(waited >= ACCEPT_TIMEOUT_S * 1000 - 300 && waited < ACCEPT_TIMEOUT_S * 1000 + 3000, `expired after ${waited} ms`);
      const carolLog = await logEntries(carol.page);
      assert.deepEqual(carolLog.map((e) => e.kind), ['assignment', 'expired']);
      assert.deepEqual(carolLog.map((e) => e.offset), [1, 2]);
      assert.equal(await carol.page.isDisabled('#accept'), true, 'an expired offer cannot be accepted');
      await shot(carol.page, 'expired-carol');

      // dave is next in line and gets the same resource.
      await dave.page.waitForSelector('#card:not([hidden])', { timeout: 5000 });
      assert.equal(await dave.page.textContent('#card-resource'), 'room-2');
      assert.equal(await dave.page.textContent('#card-status'), 'assigned');
      assert.deepEqual((await logEntries(dave.page)).map((e) => e.kind), ['assignment']);
      await shot(dave.page, 'assigned-dave');
      const { resources } = await leader(['resource', 'list', '--json']);
      assert.deepEqual(resources.find((r) => r.id === 'room-2')?.user, 'dave');
      assert.equal(await carol.page.textContent('#card-status'), 'expired', 'carol\'s card stays expired');

      // dave takes it, so no resource is free for the users of the next scenarios.
      await dave.page.click('#accept');
      await waitText(dave.page, '#card-status', 'accepted');
    }));

  test('gateway restart: the page resumes and nothing arrives twice',
    { timeout: 40000 }, scenario('restart', async () => {
      const erin = await openPage('erin', base);
      await connectAs(erin.page, { name: 'erin' });
      const ids = [];
      for (const n of [1, 2, 3]) ids.push((await leader(['publish', 'erin', JSON.stringify({ n }), '--json'])).id);
      await waitFor(async () => (await logEntries(erin.page)).length === 3, { what: 'erin\'s first 3 messages' });

      const statesBefore = (await erin.page.evaluate(() => window.__states)).length;
      gateway.kill('SIGKILL');
      await gateway.exited;
      await waitState(erin.page, 'resuming', 5000);
      await shot(erin.page, 'resuming-erin'); // the gateway is down: the badge says resuming
      gateway = await startGateway('gateway', gatewayPort, ['--dev-auth', '--admission-key', admissionKey]); // same port
      await waitState(erin.page, 'open', 15000);
      const states = (await erin.page.evaluate(() => window.__states)).slice(statesBefore);
      assert.deepEqual([...new Set(states)], ['resuming', 'open'], `states after the kill: ${states}`);
      const welcomes = erin.ws.received.filter((r) => r.frame.type === 'welcome');
      assert.equal(welcomes.at(-1).frame.recovered, true, 'the gateway honoured `since`');
      assert.equal(welcomes.at(-1).frame.epoch, welcomes[0].frame.epoch, 'same epoch');
      // The hello of the connection that got the last welcome. The browser reports a sent
      // frame and a received one as separate events, which need not arrive in that order.
      const resumeConn = welcomes.at(-1).conn;
      const helloOf = () => erin.ws.sent.find((s) => s.conn === resumeConn && s.frame.op === 'hello');
      await waitFor(async () => helloOf() !== undefined, { what: 'the resume hello to be recorded' });
      assert.deepEqual(helloOf().frame.since, { epoch: welcomes[0].frame.epoch, offset: 3 });
      await shot(erin.page, 'reconnected');

      for (const n of [4, 5]) ids.push((await leader(['publish', 'erin', JSON.stringify({ n }), '--json'])).id);
      await waitFor(async () => (await logEntries(erin.page)).length >= 5, { what: 'erin\'s 5 messages' });
      await sleep(500); // time for a duplicate to show up, if one were coming
      const log = await logEntries(erin.page);
      assert.deepEqual(log.map((e) => e.offset), [1, 2, 3, 4, 5]);
      assert.equal(new Set(log.map((e) => e.id)).size, 5, 'five distinct ids');
      assert.deepEqual(log.map((e) => e.id).sort(), [...ids].sort(), 'the ids that were published');
      assert.ok(log.every((e) => e.kind === 'message'));
      // And on the wire: each message frame reached the page once (the resume replayed none).
      const frames = erin.ws.received.filter((r) => r.frame.type === 'message').map((r) => r.frame.id);
      assert.deepEqual(frames.sort(), [...ids].sort(), `message frames on the wire: ${frames}`);
      assert.equal(await erin.page.textContent('#notice'), '', 'no re-sync notice');
      await shot(erin.page, 'five-messages-erin');
    }));

  test('JWT: a good token connects and receives; a bad one is refused once, without a retry loop',
    { timeout: 30000 }, scenario('jwt', async (t) => {
      const port = await freePort();
      const jwtGateway = await startGateway('gateway-jwt', port); // no --dev-auth
      t.after(() => stopProcess(jwtGateway));
      const jwtBase = `http://127.0.0.1:${port}`;

      const token = await leader(['token', 'frank', '--ttl', '60']);
      assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
      const frank = await openPage('frank', jwtBase);
      await connectAs(frank.page, { token });
      assert.equal(welcomeUser(frank), 'frank');
      const { id } = await leader(['publish', 'frank', JSON.stringify({ hello: 'jwt' }), '--json']);
      await frank.page.waitForSelector(`#log li[data-id="${id}"]`, { timeout: 5000 });
      assert.deepEqual((await logEntries(frank.page)).map((e) => [e.offset, e.kind]), [[1, 'message']]);
      await shot(frank.page, 'jwt-frank');

      // A well-formed token signed with another secret.
      const bad = await leader(['token', 'mallory', '--ttl', '60'], { env: stackEnv({ PUSHONCE_JWT_SECRET: 'not-the-secret-but-long-enough-0123456789' }) });
      const mallory = await openPage('mallory', jwtBase);
      await mallory.page.fill('#token', bad);
      await mallory.page.click('#connect');
      await mallory.page.waitForFunction(() => window.__states.includes('connecting'), null, { timeout: 5000 });
      await waitState(mallory.page, 'closed', 10000);
      await mallory.page.waitForFunction(() => document.getElementById('notice').textContent.startsWith('Refused'), null, { timeout: 5000 });
      await sleep(3000); // the scenario: no reconnect attempts over the next 3 s
      assert.equal(mallory.ws.opened, 1, `${mallory.ws.opened} WebSocket connections`);
      assert.equal(await stateOf(mallory.page), 'closed');
      assert.deepEqual(await mallory.page.evaluate(() => window.__states), ['connecting', 'closed']);
      assert.equal((await logEntries(mallory.page)).length, 0);
      await shot(mallory.page, 'jwt-bad-token');
    }));

  test('admin dashboard: queue length and 2 workers with the admin token; a wrong token is refused',
    { timeout: 30000 }, scenario('admin', async () => {
      for (const u of ['zoe', 'yan', 'xia']) await leader(['join', u, '--json']);
      const { length } = await leader(['queue', '--json']);
      assert.equal(length, 3, 'no free resource took one of them');

      const admin = await openPage('admin', base, '/admin');
      await admin.page.fill('#admin-token', ADMIN_TOKEN);
      await admin.page.press('#admin-token', 'Enter');
      await admin.page.waitForFunction(() => document.getElementById('status-line').textContent.startsWith('Updated'), null, { timeout: 5000 });
      await waitText(admin.page, '#queue-length', String(length));
      await admin.page.waitForFunction(() => document.querySelectorAll('#workers tbody tr').length === 2, null, { timeout: 5000 });
      const workerIds = await admin.page.$$eval('#workers tbody tr', (trs) => trs.map((tr) => tr.dataset.id).sort());
      assert.deepEqual(workerIds, ['browser-w1', 'browser-w2']);
      await admin.page.waitForFunction(() => document.querySelectorAll('#gateways tbody tr').length >= 1, null, { timeout: 5000 });
      assert.notEqual(await admin.page.textContent('#leader'), 'none');
      // The queue's row and its buttons (POST /api/queue-control with the token).
      await admin.page.waitForSelector('#queues tbody tr[data-queue="default"]', { timeout: 5000 });
      await admin.page.click('#queues tr[data-queue="default"] button[data-action="pause"]');
      await admin.page.waitForFunction(() => document.querySelector('#queues tr[data-queue="default"] td:nth-child(2)')?.textContent === 'open, paused', null, { timeout: 5000 });
      assert.equal((await leader(['settings', '--json'])).paused, true);
      await shot(admin.page, 'admin');
      await admin.page.click('#queues tr[data-queue="default"] button[data-action="resume"]');
      await admin.page.waitForFunction(() => document.querySelector('#queues tr[data-queue="default"] td:nth-child(2)')?.textContent === 'open', null, { timeout: 5000 });
      assert.equal((await leader(['settings', '--json'])).paused, false);

      const wrong = await openPage('admin-wrong', base, '/admin');
      await wrong.page.fill('#admin-token', 'not-the-admin-token');
      await wrong.page.press('#admin-token', 'Enter');
      await waitText(wrong.page, '#status-line', 'bad admin token');
      assert.equal(await wrong.page.textContent('#queue-length'), '–', 'nothing shown without the right token');
      await shot(wrong.page, 'admin-bad-token');
    }));

  test('pre-queue: the page shows the opening time and a countdown, then the pushed position',
    { timeout: 40000 }, scenario('prequeue', async () => {
      const opensAt = Date.now() + 6000;
      const opened = await leader(['open', '--at', String(opensAt), '--shuffle', '--json']);
      assert.equal(opened.state, 'prequeue');
      assert.equal(opened.opens_at, opensAt);
      const wanda = await openPage('wanda', base);
      await connectAs(wanda.page, { name: 'wanda' });
      await wanda.page.waitForSelector('#join:not([disabled])');
      await wanda.page.click('#join');
      const clock = new Date(opensAt).toLocaleTimeString('en-GB', { hour12: false });
      await waitText(wanda.page, '#position', `The line opens at ${clock}`);
      const joined = wanda.ws.received.find((r) => r.frame.type === 'joined');
      assert.equal(joined.frame.position, null);
      assert.equal(joined.frame.opens_at, opensAt);
      // The countdown ticks down.
      const first = await wanda.page.textContent('#countdown');
      assert.match(first, /^Opens in 0:0\d$/);
      await wanda.page.waitForFunction((was) => {
        const now = document.getElementById('countdown').textContent;
        return now !== was && /^Opens in 0:0\d$/.test(now);
      }, first, { timeout: 3000 });
      await shot(wanda.page, 'prequeue-countdown');
      // At the opening the position is pushed: no position op from the page.
      const before = wanda.ws.sent.filter((x) => x.frame.op === 'position').length;
      await wanda.page.waitForFunction(() => /^You are #\d+ in line$/.test(document.getElementById('position').textContent),
        null, { timeout: 12000 });
      assert.equal(await wanda.page.isHidden('#countdown'), true);
      assert.equal(wanda.ws.sent.filter((x) => x.frame.op === 'position').length, before);
      const settings = await leader(['settings', '--json']);
      assert.equal(settings.state, 'open');
      await shot(wanda.page, 'prequeue-opened');
    }));

  test('admission: the page hands the token to a checkout that verifies it with the JWKS',
    { timeout: 30000 }, scenario('admission', async () => {
      // The fake checkout: takes the form POST, verifies the token offline with `jose`
      // (examples/checkout) against the gateway's JWKS, answers a page saying what it found.
      const require = createRequire(path.join(ROOT, 'examples', 'checkout', 'package.json'));
      let jose;
      try {
        jose = require('jose');
      } catch {
        assert.fail('jose is not installed: npm ci in examples/checkout (deploy/setup.sh does)');
      }
      const jwks = jose.createRemoteJWKSet(new URL('/.well-known/jwks.json', base));
      const checkout = http.createServer((req, res) => {
        let body = '';
        req.on('data', (d) => { body += d; });
        req.on('end', async () => {
          const token = new URLSearchParams(body).get('admission') ?? '';
          let result;
          try {
            const { payload } = await jose.jwtVerify(token, jwks, { issuer: 'pushonce', algorithms: ['ES256'] });
            result = `<p id="result" data-valid="true" data-user="${payload.sub}" data-resource="${payload.resource}" data-id="${payload.jti}">Admitted</p>`;
          } catch (e) {
            result = `<p id="result" data-valid="false">Refused: ${e.code}</p>`;
          }
          res.writeHead(200, { 'content-type': 'text/html' });
          res.end(`<!doctype html><title>checkout</title>${result}`);
        });
      });
      checkout.listen(0, '127.0.0.1');
      await once(checkout, 'listening');
      const checkoutUrl = `http://127.0.0.1:${checkout.address().port}/checkout`;
      try {
        const cara = await openPage('cara', base, `/?checkout=${encodeURIComponent(checkoutUrl)}`);
        await connectAs(cara.page, { name: 'cara' });
        await cara.page.waitForSelector('#join:not([disabled])');
        await cara.page.click('#join');
        await waitFor(async () => (await leader(['position', 'cara', '--json'], { allowFail: true }))?.position > 0,
          { timeout: 5000, what: 'cara in line' }).catch(() => {});
        // Enough resources for everyone in line up to cara.
        const line = await leader(['queue', '--json']);
        const upTo = line.users.indexOf('cara') + 1;
        assert.ok(upTo > 0, `cara is not in line: ${JSON.stringify(line)}`);
        const ids = Array.from({ length: upTo }, (_, i) => `seat-${i}`);
        await leader(['resource', 'add', ...ids, '--json']);
        await cara.page.waitForSelector('#checkout:not([hidden])', { timeout: 5000 });
        const frame = cara.ws.received.find((r) => r.frame.type === 'message' && r.frame.kind === 'assignment');
        assert.ok(frame, 'an assignment frame');
        assert.equal(typeof frame.frame.data.admission, 'string', 'the assignment carries a token');
        await shot(cara.page, 'admission-cara');
        await Promise.all([cara.page.waitForNavigation(), cara.page.click('#checkout-go')]);
        const result = await cara.page.waitForSelector('#result');
        assert.equal(await result.getAttribute('data-valid'), 'true', await result.textContent());
        assert.equal(await result.getAttribute('data-user'), 'cara');
        assert.equal(await result.getAttribute('data-resource'), frame.frame.data.resource);
        assert.equal(await result.getAttribute('data-id'), frame.frame.id);
        await shot(cara.page, 'checkout-cara');
      } finally {
        checkout.close();
      }
    }));

  test('capacity: a pass admits at once; the page counts the session down, the accept renews it',
    { timeout: 30000 }, scenario('capacity', async () => {
      const set = await leader(['settings', '--rate', '600', '--session', '300', '--json']);
      assert.equal(set.rate_per_min, 600);
      assert.equal(set.session_s, 300);
      try {
        const pia = await openPage('pia', base);
        await connectAs(pia.page, { name: 'pia' });
        await pia.page.waitForSelector('#join:not([disabled])');
        await pia.page.click('#join');
        // No stock: a pass at the next due instant (one every 100 ms).
        await pia.page.waitForSelector('#card:not([hidden])', { timeout: 10000 });
        const frame = pia.ws.received.find((r) => r.frame.type === 'message' && r.frame.kind === 'assignment');
        assert.equal(frame.frame.data.kind, 'pass');
        assert.equal(typeof frame.frame.data.expires_at, 'number');
        assert.equal(await pia.page.textContent('#card-resource'), "You're in");
        await pia.page.click('#accept');
        await waitText(pia.page, '#card-status', 'accepted');
        const accepted = pia.ws.received.find((r) => r.frame.type === 'accepted');
        assert.ok(accepted.frame.expires_at >= frame.frame.data.expires_at, 'the accept renews the lease');
        await waitText(pia.page, '#countdown-label', 'Your session ends in');
        assert.equal(await pia.page.isVisible('#card-countdown'), true);
        assert.match(await pia.page.textContent('#card-countdown'), /^(5:00|4:[45]\d)$/);
        await shot(pia.page, 'capacity-pia');
      } finally {
        await leader(['settings', '--rate', '0', '--session', '0', '--json']);
      }
    }));
});

// The user of the last welcome a page received.
function welcomeUser(p) {
  return p.ws.received.filter((r) => r.frame.type === 'welcome').at(-1)?.frame.user;
}
