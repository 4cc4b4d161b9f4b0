// What the browser tests share: where the programs and the browser are, Chromium's flags,
// whether the pieces are installed (a test file skips, with the reason, when they are not),
// polling, free ports, and the long-running processes a file started (killed if node exits).
//
// Environment (CTest sets all of them; the defaults make `node --test tests/browser/` work
// from the repo root after a build in ./build):
//   PUSHONCE_BIN_DIR    the programs              (default <repo>/build/bin)
//   PUSHONCE_ARTIFACTS  screenshots and the logs  (default <repo>/build/browser-artifacts)
//   REDIS_SERVER        the redis-server binary   (default redis-server on PATH)
//   PUSHONCE_CHROMIUM   the browser               (default /usr/bin/chromium)

import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN_DIR = process.env.PUSHONCE_BIN_DIR || path.join(ROOT, 'build', 'bin');
export const ARTIFACTS =
  process.env.PUSHONCE_ARTIFACTS || path.join(ROOT, 'build', 'browser-artifacts');
export const REDIS_SERVER = process.env.REDIS_SERVER || 'redis-server';
export const CHROMIUM = process.env.PUSHONCE_CHROMIUM || '/usr/bin/chromium';
export const LEADER = path.join(BIN_DIR, 'pushonce-leader');
export const WORKER = path.join(BIN_DIR, 'pushonce-worker');
export const GATEWAY = path.join(BIN_DIR, 'pushonce-gateway');
export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic',
];

/** playwright-core's chromium, or why the browser tests cannot run on this machine. */
export async function loadChromium() {
  let chromium = null;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch {
    return { chromium, skipReason: 'playwright-core is not installed (npm install in tests/browser)' };
  }
  if (!fs.existsSync(CHROMIUM)) return { chromium, skipReason: `no browser at ${CHROMIUM}` };
  if (!fs.existsSync(GATEWAY)) return { chromium, skipReason: `no programs in ${BIN_DIR} (build first)` };
  return { chromium, skipReason: null };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls cond (sync or async) until it returns a truthy value; throws after `timeout` ms. */
export async function waitFor(cond, { timeout = 5000, interval = 25, what = 'condition' } = {}) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const v = await cond();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeout} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
    }
    await sleep(interval);
  }
}

export async function freePort() {
  const srv = net.createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const { port } = srv.address();
  srv.close();
  await once(srv, 'close');
  return port;
}

/** Every long-running process a test file started; SIGKILLed if node exits before them. */
export const children = new Set();
process.on('exit', () => {
  for (const c of children) {
    try { c.kill('SIGKILL'); } catch { /* gone */ }
  }
});
