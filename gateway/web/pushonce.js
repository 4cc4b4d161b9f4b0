// pushonce.js — the browser client of the pushonce protocol (docs/protocol.md "WebSocket
// protocol", "SSE" and "Guarantees"). A dependency-free ES module: it runs in browsers, and
// in Node given a WebSocket class (options.WebSocket) or an EventSource class and fetch.
//
//   import { PushonceClient } from '/pushonce.js';
//   const client = new PushonceClient({ user: 'alice', storage: sessionStorage });
//   client.on('state', (state) => badge.textContent = state);
//   client.on('position', (p) => show(`You are #${p.position} in line`));
//   client.on('assignment', (m) => offer(m.id, m.data.resource, m.data.accept_by));
//   client.on('resync', () => reloadAppState());   // messages may have been missed
//   client.connect();
//   const joined = await client.join();            // {type:'joined', queue, position, ticket}
//                                                  // (pre-queue: position null, opens_at)
//   await client.accept(assignmentId);             // rejects with a PushonceError (code, op)
//
// Options (all optional but a way to authenticate):
//   url            WebSocket URL; default ws(s)://<page host>/ws in a browser
//   sseUrl         the SSE stream's URL; default: url with http(s) and /sse for /ws (ops go
//                  to sseUrl + '/op')
//   transport      'auto' (default) | 'websocket' | 'sse'. auto: WebSocket first; after two
//                  WebSocket connections in a row that never opened, SSE, remembered in
//                  transportStorage under transportKey so later page loads start with SSE.
//                  client.transport says which one is in use
//   transportStorage  a Storage-like object (localStorage) for that choice (default: storage)
//   transportKey   its key (default 'pushonce:transport'; the value is 'sse')
//   token          JWT, or a function returning one (or a promise of one), called for each
//                  connection, and before the token runs out: with a function, the client
//                  sends a `refresh` op at about 80 % of the token's lifetime (iat to exp,
//                  with jitter), retrying with backoff until exp when it fails
//   refresh        RefreshSchedule options: {fraction: 0.8, jitter: 0.05, retryInitialMs:
//                  1000, retryMaxMs: 30000}
//   user           the user name for a gateway run with --dev-auth (when there is no token)
//   storage        a Storage-like object (sessionStorage): {epoch, offset} survive a reload
//   storageKey     the key in storage (default 'pushonce:resume')
//   WebSocket      the WebSocket class (default globalThis.WebSocket)
//   EventSource, fetch  for SSE (default globalThis.EventSource, globalThis.fetch)
//   backoff        {initialMs: 250, maxMs: 10000}: reconnect delays, full jitter
//   seenLimit      how many delivered message ids are remembered for dedup (1000)
//   heartbeatMs    ping period while open (25000); timeoutMs: how long a ping, or the
//                  connection up to its welcome, may go unanswered (10000)
//   stableMs       a connection open this long resets the backoff (5000)
//   ackIntervalMs  at most one ack frame per this period (200)
//   random         () => [0, 1), for the jitter (Math.random)
//   powWorkers     Web Workers that solve a proof of work (default: the cores, at most 4)
//
// Events (client.on(name, fn) returns an unsubscribe function; client.off(name, fn)):
//   message     every message frame delivered to the app, once per id, in offset order
//   assignment  / expired: the messages of that kind (after 'message')
//   position    every position frame: replies to position() and pushed updates (eta_s:
//               the estimated wait in seconds or null; waitWords(eta_s) says it;
//               approx: true when the gateway rounded a position far from the head)
//   state       (state, detail): 'connecting' | 'resuming' (reconnecting with since) |
//               'open' (detail: the welcome frame) | 'closed'; after a drop the detail is
//               the close {code, reason}. 'closed' is final: after close(), or close
//               code 1008 (auth failed / protocol violation); connect() starts again
//   resync      (welcome): the gateway could not resume where this client stopped
//               (recovered:false, or a new epoch): messages may be lost; re-sync the app
//   error       (PushonceError): an error frame no pending op was waiting for, or a
//               frame that is not JSON
//   pow         ({queue, bits, hashes, elapsedMs, done}): progress of a proof of work
//               that join() is solving (a queue with join_pow_bits set), a few per second
//   refreshed   ({type:'refreshed', exp}): the session follows a new token (exp in ms)
//   transport   ('websocket' | 'sse'): the transport changed (auto fell back to SSE)
// Handlers run synchronously; an exception in one is logged and does not stop the others.
//
// Proof of work: when a queue asks for one, the welcome (default queue) or a refused join
// carries a challenge; join() solves it in a Web Worker (SubtleCrypto SHA-256; in the main
// thread where there is no Worker) and joins with the solution, reporting 'pow' events.
//
// Ops (only while 'open', else they reject with code 'not_connected'): join(queue),
// leave(queue), position(queue) (queue defaults to 'default'), accept(id), ping(),
// refresh(token) (the client calls it itself when `token` is a function). Each
// resolves with the reply frame, or rejects with a PushonceError carrying the error
// frame's code ('conflict', 'not_found', ...), or code 'disconnected' when the connection
// drops first. The protocol has no request ids: the gateway answers the ops of one
// connection in order, so each reply settles the oldest pending op of its kind.
//
// Acks: after the handlers of a message ran, the client acks its offset (batched), so a
// later session without `since` starts after it.
//
// Transports: the same events and ops over both. Over SSE the stream is GET sseUrl with the
// token (or user) and `since` in the query, and each op is a POST to sseUrl/op with the
// session id and `Authorization: Bearer <token>`; its answer is the reply frame. When the
// stream fails the client closes it and reconnects itself (backoff, a fresh token, `since`
// from its resume state), as over WebSocket. A session closed 1008 "token expired" (its
// token ran out) reconnects when `token` is a function; any other 1008 is final.

/** The canonical form of a message id: ids are decimal integers, so "007" is "7". */
export function normalizeId(id) {
  const s = String(id);
  return /^\d+$/.test(s) ? s.replace(/^0+(?=\d)/, '') : s;
}

/** The ids already delivered to the app: a bounded set that forgets the oldest first. */
export class SeenIds {
  constructor(limit = 1000) {
    this.limit = limit;
    this.ids = new Set(); // iterates in insertion order: the first is the oldest
  }

  has(id) {
    return this.ids.has(normalizeId(id));
  }

  /** Remembers id; false when it was already there. */
  add(id) {
    const key = normalizeId(id);
    if (this.ids.has(key)) return false;
    this.ids.add(key);
    if (this.ids.size > this.limit) this.ids.delete(this.ids.values().next().value);
    return true;
  }

  clear() {
    this.ids.clear();
  }

  get size() {
    return this.ids.size;
  }
}

/** Reconnect delays: exponential backoff with full jitter, uniform in [0, cap). */
export class Backoff {
  constructor({ initialMs = 250, maxMs = 10000, random = Math.random } = {}) {
    Object.assign(this, { initialMs, maxMs, random });
    this.attempt = 0;
  }

  /** The cap of the next delay: min(max, initial * 2^attempt). */
  cap() {
    return Math.min(this.maxMs, this.initialMs * 2 ** this.attempt);
  }

  next() {
    const delay = Math.floor(this.random() * this.cap());
    this.attempt = Math.min(this.attempt + 1, 30); // past the max anyway; keeps 2^n finite
    return delay;
  }

  reset() {
    this.attempt = 0;
  }
}

/** The claims of a JWT (not verified: to tell whose resume state is stored, and when it ends). */
export function tokenClaims(token) {
  try {
    const b64 = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const claims = JSON.parse(new TextDecoder().decode(bytes));
    return claims && typeof claims === 'object' ? claims : null;
  } catch {
    return null;
  }
}

/** The `sub` claim of a JWT (not verified: only to tell whose resume state is stored). */
export function tokenSubject(token) {
  return tokenClaims(token)?.sub ?? null;
}

/**
 * When to refresh a token (pure logic): at `fraction` of its lifetime (iat to exp; without
 * iat, from when it was received), give or take `jitter` of it so that many clients do not
 * refresh at once; after a failure, again after an exponential backoff (half fixed, half
 * random) while before exp; none once exp is reached (the gateway closes the session and
 * the client reconnects with a fresh token).
 */
export class RefreshSchedule {
  constructor({ fraction = 0.8, jitter = 0.05, retryInitialMs = 1000, retryMaxMs = 30000, random = Math.random } = {}) {
    Object.assign(this, { fraction, jitter, retryInitialMs, retryMaxMs, random });
    this.expMs = null;
    this.failures = 0;
  }

  /** ms from `now` (ms) until the refresh of a token with these claims, or null (no exp). */
  plan(claims, now) {
    this.failures = 0;
    this.expMs = null;
    if (!claims || typeof claims.exp !== 'number') return null;
    const end = claims.exp * 1000;
    const start = typeof claims.iat === 'number' && claims.iat * 1000 <= end ? claims.iat * 1000 : Math.min(now, end);
    const f = this.fraction + (this.random() * 2 - 1) * this.jitter;
    this.expMs = end;
    return Math.max(0, Math.round(start + (end - start) * f - now));
  }

  /** A refresh failed at `now`: ms until the next try, or null when the token has run out. */
  retry(now) {
    if (this.expMs === null) return null;
    const left = this.expMs - now;
    if (left <= 100) return null;
    const cap = Math.min(this.retryMaxMs, this.retryInitialMs * 2 ** Math.min(this.failures, 30));
    this.failures++;
    const delay = Math.round(cap / 2 + this.random() * (cap / 2));
    return delay < left ? delay : Math.floor(left / 2); // the last tries fit before exp
  }
}

/**
 * Which transport to use (pure logic). 'websocket' and 'sse' are fixed; 'auto' starts with
 * WebSocket and switches to SSE after `failuresToFallBack` WebSocket connections in a row that
 * never opened, remembering it in storage (key: 'pushonce:transport', value 'sse').
 */
export class TransportChoice {
  constructor({ mode = 'auto', storage = null, key = 'pushonce:transport', failuresToFallBack = 2, hasWebSocket = true, hasSse = true } = {}) {
    if (!['auto', 'websocket', 'sse'].includes(mode)) throw new TypeError(`PushonceClient: unknown transport '${mode}'`);
    Object.assign(this, { mode, storage, key, failuresToFallBack, hasSse });
    this.failures = 0;
    this.websocketWorked = false; // a WebSocket opened here: later failures are the server's
    let remembered = null;
    try {
      remembered = storage?.getItem(key) ?? null;
    } catch {
      // storage refused: nothing remembered
    }
    // auto: SSE when remembered (or when there is no WebSocket), where SSE can run at all
    const sse = hasSse && (remembered === 'sse' || !hasWebSocket);
    this.current = mode !== 'auto' ? mode : sse ? 'sse' : 'websocket';
  }

  /** A connection of `transport` opened: failures in a row start again. */
  opened(transport) {
    if (transport === 'websocket') this.websocketWorked = true;
    if (transport === this.current) this.failures = 0;
  }

  /**
   * A connection of `transport` ended before it opened; true when the choice changed. Once a
   * WebSocket has opened on this page, WebSocket is not blocked on this network: failures
   * after it (a gateway restarting, refusing connections for a while) never fall back.
   */
  failed(transport) {
    if (this.mode !== 'auto' || !this.hasSse || transport !== 'websocket' || this.current !== 'websocket') return false;
    if (this.websocketWorked) return false;
    if (++this.failures < this.failuresToFallBack) return false;
    this.current = 'sse';
    this.failures = 0;
    try {
      this.storage?.setItem(this.key, 'sse');
    } catch {
      // not remembered: the next page load tries WebSocket again
    }
    return true;
  }
}

/**
 * One SSE session with the interface the client uses of a WebSocket (onopen, onmessage,
 * onclose, send, close): the stream is an EventSource on `url` (token or user, and since,
 * in the query); each frame sent is an op POSTed to `opUrl` in order, its answer handed to
 * onmessage as the reply frame. A stream that fails is closed (no EventSource reconnect:
 * the client reconnects with a fresh token and its own since); an `error` event carrying a
 * close code ends the session with that code and reason.
 */
export class SseConnection {
  constructor({ url, opUrl, EventSource, fetch }) {
    Object.assign(this, { url, opUrl, EventSource, fetch });
    this.readyState = 0;
    this.session = null;
    this.chain = Promise.resolve();
    this.onopen = this.onmessage = this.onclose = this.onerror = null;
  }

  /** Opens the stream as `token` (or `user` with dev auth), resuming after `since`. */
  start({ token, user, since }) {
    this.token = token ?? null;
    this.user = user ?? null;
    const q = new URLSearchParams();
    if (this.token !== null) q.set('token', this.token);
    else q.set('user', this.user ?? '');
    if (since) q.set('since', `${since.epoch}:${since.offset}`);
    const es = new this.EventSource(`${this.url}${this.url.includes('?') ? '&' : '?'}${q}`);
    this.es = es;
    const frame = (e) => this.#frame(e.data);
    es.onopen = () => {
      if (this.readyState !== 0) return;
      this.readyState = 1;
      this.onopen?.({});
    };
    es.addEventListener('welcome', (e) => {
      try {
        this.session = JSON.parse(e.data).session ?? null;
      } catch {
        // not JSON: the client reports it
      }
      frame(e);
    });
    es.addEventListener('position', frame);
    es.addEventListener('message', frame); // the message frames (no event name)
    es.addEventListener('error', (e) => {
      if (typeof e?.data === 'string' && e.data !== '') {
        let f = null;
        try {
          f = JSON.parse(e.data);
        } catch {
          // an error frame that is not JSON: passed on as it is
        }
        if (f && typeof f.close === 'number') return this.#end(f.close, f.message ?? f.reason ?? '');
        return frame(e);
      }
      this.#end(1006, 'the event stream failed');
    });
  }

  send(text) {
    if (this.readyState === 3) throw new Error('send on a closed SSE session');
    const frame = JSON.parse(text);
    const body = { ...frame, session: this.session };
    const headers = { 'content-type': 'application/json' };
    if (this.token !== null) headers.authorization = `Bearer ${this.token}`;
    else body.user = this.user;
    this.chain = this.chain.then(() => this.#post(body, headers, frame));
  }

  close() {
    if (this.readyState === 3) return;
    this.readyState = 3;
    try {
      this.es?.close();
    } catch {
      // already closed
    }
  }

  async #post(body, headers, frame) {
    if (this.readyState === 3) return;
    let res;
    let text = '';
    try {
      res = await this.fetch(this.opUrl, { method: 'POST', headers, body: JSON.stringify(body) });
      text = res.status === 204 ? '' : await res.text();
    } catch (e) {
      this.#frame(JSON.stringify({ type: 'error', code: 'disconnected', message: `op not sent: ${e?.message ?? e}`, op: frame.op }));
      return;
    }
    if (res.status === 204) return;
    let reply = null;
    try {
      reply = JSON.parse(text);
    } catch {
      // not JSON: an HTTP error below
    }
    if (res.ok && reply && typeof reply.type === 'string') {
      if (reply.type === 'refreshed' && frame.op === 'refresh') this.token = frame.token; // ops carry the new one
      this.#frame(text);
      return;
    }
    const code = typeof reply?.error === 'string' ? reply.error : `http_${res.status}`;
    this.#frame(JSON.stringify({ type: 'error', code, message: reply?.message ?? `HTTP ${res.status}`, op: frame.op }));
    if (res.status === 404) this.#end(1006, 'the session is gone'); // its stream ended: reconnect
  }

  #frame(data) {
    if (this.readyState !== 3) this.onmessage?.({ data });
  }

  #end(code, reason) {
    if (this.readyState === 3) return;
    this.close();
    this.onclose?.({ code, reason });
  }
}

/**
 * The estimated wait of a joined or position frame (its eta_s, whole seconds) in words:
 * "about N min" (at least 1), or '' when the frame has none (null: nothing to go by).
 */
export function waitWords(etaS) {
  if (typeof etaS !== 'number' || !Number.isFinite(etaS) || etaS < 0) return '';
  return `about ${Math.max(1, Math.round(etaS / 60))} min`;
}

/**
 * Resume bookkeeping: where this client stands in the user's inbox ({epoch, offset} of
 * the last message taken) and which ids the app has already seen.
 */
export class ResumeState {
  constructor({ saved = null, seenLimit = 1000 } = {}) {
    const ok = saved && typeof saved.epoch === 'string' && Number.isSafeInteger(saved.offset);
    this.user = ok && typeof saved.user === 'string' ? saved.user : null;
    this.epoch = ok ? saved.epoch : null;
    this.offset = ok ? saved.offset : 0;
    this.seen = new SeenIds(seenLimit);
  }

  /** The `since` of a hello as `user` (null: not known before the welcome), or null. */
  since(user) {
    if (this.epoch === null) return null;
    if (user != null && this.user !== null && user !== this.user) return null; // someone else's
    return { epoch: this.epoch, offset: this.offset };
  }

  /** Takes a welcome frame; true when the app must re-sync. */
  onWelcome(welcome) {
    if (welcome.user !== this.user) {
      // Another user (or the first welcome): nothing known applies to this inbox.
      this.user = welcome.user;
      this.epoch = null;
      this.offset = 0;
      this.seen.clear();
    }
    const resync = !welcome.recovered || (this.epoch !== null && welcome.epoch !== this.epoch);
    // Not recovered: the gateway replays from a start this client cannot know (its last
    // ack, or its latest offset), in offsets of the welcome's epoch; every one of them is
    // new to this basis, so the floor drops to 0 and only the id dedup guards the replay.
    if (resync) this.offset = 0;
    this.epoch = welcome.epoch;
    return resync;
  }

  /**
   * Takes a message frame: 'stale' (offset <= the last one: already taken, drop it),
   * 'duplicate' (a new offset but an id the app has seen: advance, do not deliver), or
   * 'deliver'.
   */
  onMessage(message) {
    if (!(message.offset > this.offset)) return 'stale'; // also a missing offset
    this.offset = message.offset;
    return this.seen.add(message.id) ? 'deliver' : 'duplicate';
  }

  toJSON() {
    return { user: this.user, epoch: this.epoch, offset: this.offset };
  }
}

/** Ack batching: at most one ack per interval, always of the highest handled offset. */
export class AckBatcher {
  constructor(intervalMs = 200) {
    this.intervalMs = intervalMs;
    this.reset();
  }

  /** Forgets everything (a new epoch: its offsets say nothing about the old ones). */
  reset() {
    this.handled = 0;
    this.acked = 0;
    this.lastSentAt = -Infinity;
  }

  /** The app has handled every message up to offset. */
  note(offset) {
    this.handled = Math.max(this.handled, offset);
  }

  /** True when an ack is owed. */
  pending() {
    return this.handled > this.acked;
  }

  /** Milliseconds until the next ack may go out. */
  delay(now) {
    return Math.max(0, this.lastSentAt + this.intervalMs - now);
  }

  /** The offset to ack now (and it counts as sent), or null when none is owed. */
  take(now) {
    if (!this.pending()) return null;
    this.acked = this.handled;
    this.lastSentAt = now;
    return this.acked;
  }
}

/** Leading zero bits of a byte array (a SHA-256 digest). */
export function leadingZeroBits(bytes) {
  let n = 0;
  for (const b of bytes) {
    if (b === 0) {
      n += 8;
      continue;
    }
    return n + Math.clz32(b) - 24;
  }
  return n;
}

// One solver loop, the same text in a Worker and in the main thread: nonces start, start +
// step, ...; SHA-256(prefix + nonce) through SubtleCrypto, `batch` digests in flight at
// once; report({hashes}) about every 250 ms; resolves with the nonce (a decimal string).
const POW_SEARCH_SOURCE = `async function powSearch(prefix, bits, start, step, report, stopped) {
  const enc = new TextEncoder();
  const head = enc.encode(prefix);
  const batch = 64;
  let nonce = start, hashes = 0, last = Date.now();
  const lzb = (d) => {
    let n = 0;
    for (let i = 0; i < d.length; i++) {
      if (d[i] === 0) { n += 8; continue; }
      return n + Math.clz32(d[i]) - 24;
    }
    return n;
  };
  for (;;) {
    if (stopped()) return null;
    const nonces = [], work = [];
    for (let i = 0; i < batch; i++, nonce += step) {
      const text = String(nonce);
      const buf = new Uint8Array(head.length + text.length);
      buf.set(head);
      for (let j = 0; j < text.length; j++) buf[head.length + j] = text.charCodeAt(j);
      nonces.push(text);
      work.push(crypto.subtle.digest('SHA-256', buf));
    }
    const digests = await Promise.all(work);
    hashes += batch;
    for (let i = 0; i < batch; i++) {
      if (lzb(new Uint8Array(digests[i])) >= bits) {
        report({ hashes });
        return nonces[i];
      }
    }
    if (Date.now() - last >= 250) {
      last = Date.now();
      report({ hashes });
      hashes = 0;
    }
  }
}`;

const POW_WORKER_SOURCE = `${POW_SEARCH_SOURCE}
let stop = false;
self.onmessage = async (e) => {
  if (e.data.stop) { stop = true; return; }
  const { prefix, bits, start, step } = e.data;
  const nonce = await powSearch(prefix, bits, start, step, (p) => self.postMessage(p), () => stop);
  if (nonce !== null) self.postMessage({ nonce });
};`;

// The same loop in this thread (where there is no Worker), compiled on first use.
let powSearchHere = null;

/**
 * Solves a challenge {id, prefix, bits}: resolves with {id, nonce}. onProgress({bits,
 * hashes, elapsedMs, done}) a few times a second. In browsers, `workers` Web Workers
 * (default: the cores, at most 4) share the nonces; without Worker, the main thread.
 */
export async function solvePow(challenge, { onProgress = () => {}, workers } = {}) {
  const started = Date.now();
  let hashes = 0;
  const progress = (n, done = false) => {
    hashes += n;
    onProgress({ bits: challenge.bits, hashes, elapsedMs: Date.now() - started, done });
  };
  const canWork = typeof Worker === 'function' && typeof Blob === 'function' && typeof URL?.createObjectURL === 'function';
  if (!canWork) {
    // eslint-disable-next-line no-new-func
    powSearchHere ??= new Function(`${POW_SEARCH_SOURCE}; return powSearch;`)();
    const nonce = await powSearchHere(challenge.prefix, challenge.bits, 0, 1, (p) => progress(p.hashes), () => false);
    progress(0, true);
    return { id: challenge.id, nonce };
  }
  const n = Math.max(1, Math.min(workers ?? globalThis.navigator?.hardwareConcurrency ?? 1, 4));
  const url = URL.createObjectURL(new Blob([POW_WORKER_SOURCE], { type: 'text/javascript' }));
  const pool = [];
  try {
    const nonce = await new Promise((resolve, reject) => {
      for (let i = 0; i < n; i++) {
        const w = new Worker(url);
        pool.push(w);
        w.onerror = (e) => reject(new PushonceError({ code: 'pow', message: `proof of work: ${e.message}`, op: 'join' }));
        w.onmessage = (e) => {
          if (e.data.nonce !== undefined) resolve(e.data.nonce);
          else progress(e.data.hashes);
        };
        w.postMessage({ prefix: challenge.prefix, bits: challenge.bits, start: i, step: n });
      }
    });
    progress(0, true);
    return { id: challenge.id, nonce };
  } finally {
    for (const w of pool) w.terminate();
    URL.revokeObjectURL(url);
  }
}

/** An error frame (or a local failure) as an Error: code, op and the frame itself. */
export class PushonceError extends Error {
  constructor(frame) {
    super(frame.message || frame.code);
    this.name = 'PushonceError';
    this.code = frame.code;
    this.op = frame.op ?? '';
    this.frame = frame;
  }
}

// The op a reply frame answers.
const REPLY_OP = { joined: 'join', left: 'leave', position: 'position', accepted: 'accept', pong: 'ping', refreshed: 'refresh' };

/** Pending ops and their replies, matched in order per op. */
export class OpMatcher {
  constructor() {
    this.pending = new Map(); // op -> [{queue, resolve, reject}], oldest first
  }

  expect(op, queue, resolve, reject) {
    if (!this.pending.has(op)) this.pending.set(op, []);
    this.pending.get(op).push({ queue, resolve, reject });
  }

  /**
   * Settles the pending op a reply or error frame answers; false when none waits. A
   * position frame may be a push rather than the reply: it settles the oldest position
   * op of its queue, which is right either way (both tell the current position).
   */
  settle(frame) {
    const isError = frame.type === 'error';
    const list = this.pending.get(isError ? frame.op : REPLY_OP[frame.type]);
    if (!list || list.length === 0) return false;
    const at = frame.type === 'position' ? list.findIndex((p) => p.queue === frame.queue) : 0;
    if (at < 0) return false;
    const [p] = list.splice(at, 1);
    if (isError) p.reject(new PushonceError(frame));
    else p.resolve(frame);
    return true;
  }

  rejectAll(error) {
    const all = [...this.pending.values()].flat();
    this.pending.clear();
    for (const p of all) p.reject(error);
  }
}

function defaultUrl() {
  const loc = globalThis.location;
  if (!loc) throw new TypeError('PushonceClient: options.url is required outside a browser');
  return `${loc.protocol === 'https:' ? 'wss:' : 'ws:'}//${loc.host}/ws`;
}

/** The SSE URL beside a WebSocket URL: ws(s)://host/ws → http(s)://host/sse. */
export function sseUrlOf(wsUrl) {
  return wsUrl.replace(/^ws(s?):/, 'http$1:').replace(/\/ws(?=$|\?)/, '/sse');
}

function loadSaved(storage, key) {
  try {
    return JSON.parse(storage?.getItem(key) ?? 'null');
  } catch {
    return null;
  }
}

const AUTH_FAILED = 1008; // auth failed or protocol violation: retrying cannot help
const MAX_TIMER_MS = 2 ** 31 - 1; // the longest setTimeout delay
const TOKEN_EXPIRED = 'token expired'; // the 1008 reason of a token that ran out: a new one can
const GAVE_UP = 4000; // our own close code: no answer in time, or no token

export class PushonceClient {
  constructor(options = {}) {
    this.url = options.url ?? defaultUrl();
    this.token = options.token;
    this.user = options.user;
    this.storage = options.storage ?? null;
    this.storageKey = options.storageKey ?? 'pushonce:resume';
    this.WebSocket = options.WebSocket ?? globalThis.WebSocket;
    this.EventSource = options.EventSource ?? globalThis.EventSource;
    this.fetch = options.fetch ?? globalThis.fetch?.bind(globalThis);
    this.sseUrl = options.sseUrl ?? sseUrlOf(this.url);
    const hasWebSocket = typeof this.WebSocket === 'function';
    const hasSse = typeof this.EventSource === 'function' && typeof this.fetch === 'function';
    this.transports = new TransportChoice({
      mode: options.transport ?? (hasWebSocket || !hasSse ? 'auto' : 'sse'),
      storage: options.transportStorage ?? options.storage ?? null,
      key: options.transportKey,
      hasWebSocket,
      hasSse,
    });
    if (this.transports.current === 'websocket' && !hasWebSocket) throw new TypeError('PushonceClient: no WebSocket class');
    if (this.transports.mode !== 'websocket' && !hasSse && !hasWebSocket) throw new TypeError('PushonceClient: no EventSource and fetch');
    this.refreshSchedule = new RefreshSchedule({ ...options.refresh, random: options.random ?? Math.random });
    this.sessionToken = null; // the token the current session follows
    this.heartbeatMs = options.heartbeatMs ?? 25000;
    this.timeoutMs = options.timeoutMs ?? 10000;
    this.stableMs = options.stableMs ?? 5000;
    this.backoff = new Backoff({ ...options.backoff, random: options.random ?? Math.random });
    this.resume = new ResumeState({
      saved: loadSaved(this.storage, this.storageKey),
      seenLimit: options.seenLimit ?? 1000,
    });
    this.acks = new AckBatcher(options.ackIntervalMs ?? 200);
    this.ops = new OpMatcher();
    this.challenges = new Map(); // queue -> the proof-of-work challenge to solve at join
    this.powWorkers = options.powWorkers; // Web Workers per solve (default: cores, max 4)
    this.listeners = new Map();
    this.state = 'closed';
    this.stopped = true;
    this.ws = null;
    this.openedAt = 0; // when the current connection got its welcome (0: not yet)
    this.timers = { reconnect: null, deadline: null, heartbeat: null, ack: null, refresh: null };
  }

  /** The transport in use, or to be used by the next connection: 'websocket' | 'sse'. */
  get transport() {
    return this.transports.current;
  }

  // ---- events ---------------------------------------------------------------------------
  on(name, fn) {
    if (!this.listeners.has(name)) this.listeners.set(name, new Set());
    this.listeners.get(name).add(fn);
    return () => this.off(name, fn);
  }

  off(name, fn) {
    this.listeners.get(name)?.delete(fn);
  }

  #emit(name, ...args) {
    for (const fn of [...(this.listeners.get(name) ?? [])]) {
      try {
        fn(...args);
      } catch (e) {
        console.error(`pushonce: a '${name}' handler threw`, e);
      }
    }
  }

  #setState(state, detail) {
    if (state === this.state) return;
    this.state = state;
    this.#emit('state', state, detail);
  }

  // ---- ops ------------------------------------------------------------------------------
  /**
   * Joins `queue`. When the queue asks for a proof of work (a challenge in the welcome, or
   * in the error frame of a refused join), solves it first (see solvePow) and joins with
   * it; 'pow' events report the progress.
   */
  async join(queue = 'default') {
    for (let attempt = 0; ; attempt++) {
      const fields = { queue };
      const challenge = this.challenges.get(queue);
      if (challenge) {
        this.challenges.delete(queue); // single use
        const onProgress = (p) => this.#emit('pow', { queue, ...p });
        fields.pow = await solvePow(challenge, { onProgress, workers: this.powWorkers });
      }
      try {
        return await this.#request('join', fields);
      } catch (e) {
        // Refused for its proof of work: the error frame carries a fresh challenge.
        if (e.code === 'bad_request' && e.frame?.challenge && attempt < 3) {
          this.challenges.set(queue, e.frame.challenge);
          continue;
        }
        throw e;
      }
    }
  }

  leave(queue = 'default') {
    return this.#request('leave', { queue });
  }

  position(queue = 'default') {
    return this.#request('position', { queue });
  }

  accept(id) {
    return this.#request('accept', { id: String(id) });
  }

  ping() {
    return this.#request('ping', {});
  }

  /** Moves the session to `token` (same user); resolves with {type:'refreshed', exp}. */
  refresh(token) {
    return this.#request('refresh', { token });
  }

  #request(op, fields) {
    if (this.state !== 'open') {
      return Promise.reject(new PushonceError({ code: 'not_connected', message: 'not connected', op }));
    }
    return new Promise((resolve, reject) => {
      this.ops.expect(op, fields.queue, resolve, reject);
      this.#send({ op, ...fields });
    });
  }

  #send(frame) {
    this.ws.send(JSON.stringify(frame));
  }

  // ---- connection -----------------------------------------------------------------------
  connect() {
    if (!this.stopped) return;
    this.stopped = false;
    this.#open();
  }

  /** Closes for good (sending the ack still owed); state 'closed'. */
  close() {
    if (this.stopped) return;
    this.stopped = true;
    this.#arm('reconnect', null);
    if (this.state === 'open') this.#flushAck();
    if (this.ws) this.#drop(1000, 'closed by the client');
    else this.#setState('closed', { code: 1000, reason: 'closed by the client' });
  }

  #open() {
    const kind = this.transports.current;
    const conn = kind === 'sse'
      ? new SseConnection({ url: this.sseUrl, opUrl: `${this.sseUrl}/op`, EventSource: this.EventSource, fetch: this.fetch })
      : new this.WebSocket(this.url);
    this.ws = conn;
    this.connKind = kind;
    this.connOpened = false;
    this.#setState(this.resume.epoch !== null ? 'resuming' : 'connecting');
    this.#arm('deadline', setTimeout(() => this.#drop(GAVE_UP, 'no welcome in time'), this.timeoutMs));
    conn.onopen = () => {
      this.connOpened = true;
      this.transports.opened(kind);
      if (kind === 'websocket') this.#sendHello(conn);
    };
    conn.onmessage = (e) => this.#onFrame(e.data);
    conn.onclose = (e) => this.#drop(e.code, e.reason);
    conn.onerror = () => {}; // a close event follows (and it stays set: see #drop)
    if (kind === 'sse') this.#startSse(conn);
  }

  // Who the next session is: {token} or {user}, and `who` (the user, for the since); a
  // promise of it only when the token comes from a function (else the hello goes out at once).
  #credentials() {
    if (this.token == null) return { user: this.user, who: this.user ?? null };
    if (typeof this.token !== 'function') return { token: this.token, who: tokenSubject(this.token) };
    return Promise.resolve(this.token()).then((token) => ({ token, who: tokenSubject(token) }));
  }

  // The token could not be had: report it and give up on this connection (backoff retries).
  #noToken(conn, e) {
    if (conn !== this.ws) return;
    this.#emit('error', new PushonceError({ code: 'token', message: `token: ${e?.message ?? e}` }));
    this.#drop(GAVE_UP, 'no token');
  }

  async #sendHello(ws) {
    let cred;
    try {
      cred = this.#credentials();
      if (cred instanceof Promise) cred = await cred;
    } catch (e) {
      this.#noToken(ws, e);
      return;
    }
    if (ws !== this.ws) return; // dropped while the token was fetched
    const hello = { op: 'hello' };
    if (cred.token !== undefined) hello.token = cred.token;
    else hello.user = cred.user;
    this.sessionToken = cred.token ?? null;
    const since = this.resume.since(cred.who);
    if (since) hello.since = since;
    this.#send(hello);
  }

  async #startSse(conn) {
    let cred;
    try {
      cred = this.#credentials();
      if (cred instanceof Promise) cred = await cred;
    } catch (e) {
      this.#noToken(conn, e);
      return;
    }
    if (conn !== this.ws) return;
    this.sessionToken = cred.token ?? null;
    conn.start({ token: cred.token, user: cred.user, since: this.resume.since(cred.who) });
  }

  /**
   * The end of the current connection, whichever way it ends (close event, deadline,
   * close()): forget the socket, fail its pending ops, then reconnect or stop.
   */
  #drop(code, reason) {
    const ws = this.ws;
    if (!ws) return;
    this.ws = null;
    // Late events of this socket are ignored from here on. onerror stays a no-op: Node's
    // `ws` reports a close during the handshake as an 'error' event, fatal with no listener.
    ws.onopen = ws.onmessage = ws.onclose = null;
    try {
      ws.close(code === 1000 || code === GAVE_UP ? code : undefined); // the codes a client may send
    } catch {
      // already closed
    }
    for (const name of ['deadline', 'heartbeat', 'ack', 'refresh']) this.#arm(name, null);
    this.ops.rejectAll(new PushonceError({ code: 'disconnected', message: reason || `closed (${code})` }));
    if (this.openedAt && Date.now() - this.openedAt >= this.stableMs) this.backoff.reset();
    this.openedAt = 0;
    // A WebSocket that never opened (blocked, or no route): auto falls back to SSE after two.
    if (!this.stopped && !this.connOpened && this.transports.failed(this.connKind)) {
      this.#emit('transport', this.transports.current);
    }
    // 1008 is final, but for a token that ran out when a fresh one can be had.
    if (code === AUTH_FAILED && !(reason === TOKEN_EXPIRED && typeof this.token === 'function')) this.stopped = true;
    if (this.stopped) {
      this.#setState('closed', { code, reason });
      return;
    }
    this.#setState(this.resume.epoch !== null ? 'resuming' : 'connecting', { code, reason });
    this.#arm('reconnect', setTimeout(() => this.#open(), this.backoff.next()));
  }

  // Replaces a timer (null: just clears it). clearTimeout clears intervals too.
  #arm(name, handle) {
    clearTimeout(this.timers[name]);
    this.timers[name] = handle;
  }

  // ---- frames ---------------------------------------------------------------------------
  #onFrame(text) {
    this.#arm('deadline', null); // any frame shows the connection is alive
    let frame;
    try {
      frame = JSON.parse(text);
    } catch {
      this.#emit('error', new PushonceError({ code: 'bad_frame', message: 'a frame is not JSON' }));
      return;
    }
    switch (frame.type) {
      case 'welcome':
        return this.#onWelcome(frame);
      case 'message':
        return this.#onMessage(frame);
      case 'position':
        this.ops.settle(frame);
        return this.#emit('position', frame);
      case 'error':
        if (!this.ops.settle(frame)) this.#emit('error', new PushonceError(frame));
        return;
      default:
        this.ops.settle(frame); // joined, left, accepted, pong
    }
  }

  #onWelcome(welcome) {
    this.challenges.clear();
    if (welcome.challenge) this.challenges.set('default', welcome.challenge);
    const resync = this.resume.onWelcome(welcome);
    if (resync) this.acks.reset();
    this.#save();
    this.openedAt = Date.now();
    this.#arm('heartbeat', setInterval(() => this.#heartbeat(), this.heartbeatMs));
    this.#setState('open', welcome);
    if (resync) this.#emit('resync', welcome);
    this.#scheduleAck(); // an ack owed from before a reconnect
    this.#scheduleRefresh();
  }

  // ---- token refresh (RefreshSchedule decides when) ---------------------------------------
  #scheduleRefresh() {
    if (typeof this.token !== 'function' || this.sessionToken === null) return;
    const delay = this.refreshSchedule.plan(tokenClaims(this.sessionToken), Date.now());
    if (delay === null) return;
    // setTimeout fires at once past 2^31 - 1 ms (24.8 days): a long token is looked at again then
    if (delay > MAX_TIMER_MS) this.#arm('refresh', setTimeout(() => this.#scheduleRefresh(), MAX_TIMER_MS));
    else this.#arm('refresh', setTimeout(() => this.#refreshNow(), delay));
  }

  async #refreshNow() {
    this.timers.refresh = null;
    const conn = this.ws;
    if (this.state !== 'open' || !conn) return;
    try {
      const token = await this.token();
      if (conn !== this.ws) return; // dropped meanwhile: the next welcome schedules again
      const reply = await this.refresh(token);
      this.sessionToken = token;
      this.#emit('refreshed', reply);
      this.#scheduleRefresh();
    } catch (e) {
      if (conn !== this.ws) return;
      this.#emit('error', e instanceof PushonceError ? e
        : new PushonceError({ code: 'token', message: `token: ${e?.message ?? e}`, op: 'refresh' }));
      const delay = this.refreshSchedule.retry(Date.now());
      if (delay !== null) this.#arm('refresh', setTimeout(() => this.#refreshNow(), delay));
    }
  }

  #heartbeat() {
    this.ping().catch(() => {}); // a drop fails it; the deadline below notices silence
    if (this.timers.deadline) return; // the previous ping is still unanswered
    this.#arm('deadline', setTimeout(() => this.#drop(GAVE_UP, 'no pong in time'), this.timeoutMs));
  }

  #onMessage(message) {
    const verdict = this.resume.onMessage(message);
    if (verdict === 'stale') return;
    this.#save();
    if (verdict === 'deliver') {
      this.#emit('message', message);
      if (message.kind === 'assignment' || message.kind === 'expired') this.#emit(message.kind, message);
    }
    this.acks.note(message.offset); // the handlers ran (a duplicate is handled by dropping it)
    this.#scheduleAck();
  }

  #scheduleAck() {
    if (this.timers.ack || this.state !== 'open' || !this.acks.pending()) return; // open: see #drop
    this.#arm('ack', setTimeout(() => {
      this.timers.ack = null;
      this.#flushAck();
    }, this.acks.delay(Date.now())));
  }

  #flushAck() {
    const offset = this.acks.take(Date.now());
    if (offset !== null) this.#send({ op: 'ack', offset });
  }

  #save() {
    try {
      this.storage?.setItem(this.storageKey, JSON.stringify(this.resume));
    } catch {
      // storage full or refused: resuming after a reload is lost, nothing else
    }
  }
}
