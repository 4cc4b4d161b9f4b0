// pushonce.js — the browser client of the pushonce WebSocket protocol (PROTOCOL.md
// "WebSocket protocol" and "Guarantees"). A dependency-free ES module: it runs in
// browsers, and in Node given a WebSocket class (options.WebSocket).
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
//   token          JWT, or a function returning one (or a promise of one), called for each
//                  connection so an expiring token can be refreshed
//   user           the user name for a gateway run with --dev-auth (when there is no token)
//   storage        a Storage-like object (sessionStorage): {epoch, offset} survive a reload
//   storageKey     the key in storage (default 'pushonce:resume')
//   WebSocket      the WebSocket class (default globalThis.WebSocket)
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
//               the estimated wait in seconds or null; waitWords(eta_s) says it)
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
// Handlers run synchronously; an exception in one is logged and does not stop the others.
//
// Proof of work: when a queue asks for one, the welcome (default queue) or a refused join
// carries a challenge; join() solves it in a Web Worker (SubtleCrypto SHA-256; in the main
// thread where there is no Worker) and joins with the solution, reporting 'pow' events.
//
// Ops (only while 'open', else they reject with code 'not_connected'): join(queue),
// leave(queue), position(queue) (queue defaults to 'default'), accept(id), ping(). Each
// resolves with the reply frame, or rejects with a PushonceError carrying the error
// frame's code ('conflict', 'not_found', ...), or code 'disconnected' when the connection
// drops first. The protocol has no request ids: the gateway answers the ops of one
// connection in order, so each reply settles the oldest pending op of its kind.
//
// Acks: after the handlers of a message ran, the client acks its offset (batched), so a
// later session without `since` starts after it.

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

/** The `sub` claim of a JWT (not verified: only to tell whose resume state is stored). */
export function tokenSubject(token) {
  try {
    const b64 = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    return JSON.parse(new TextDecoder().decode(bytes)).sub ?? null;
  } catch {
    return null;
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
const REPLY_OP = { joined: 'join', left: 'leave', position: 'position', accepted: 'accept', pong: 'ping' };

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

function loadSaved(storage, key) {
  try {
    return JSON.parse(storage?.getItem(key) ?? 'null');
  } catch {
    return null;
  }
}

const AUTH_FAILED = 1008; // auth failed or protocol violation: retrying cannot help
const GAVE_UP = 4000; // our own close code: no answer in time, or no token

export class PushonceClient {
  constructor(options = {}) {
    this.url = options.url ?? defaultUrl();
    this.token = options.token;
    this.user = options.user;
    this.storage = options.storage ?? null;
    this.storageKey = options.storageKey ?? 'pushonce:resume';
    this.WebSocket = options.WebSocket ?? globalThis.WebSocket;
    if (typeof this.WebSocket !== 'function') throw new TypeError('PushonceClient: no WebSocket class');
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
    this.timers = { reconnect: null, deadline: null, heartbeat: null, ack: null };
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
    const ws = new this.WebSocket(this.url);
    this.ws = ws;
    this.#setState(this.resume.epoch !== null ? 'resuming' : 'connecting');
    this.#arm('deadline', setTimeout(() => this.#drop(GAVE_UP, 'no welcome in time'), this.timeoutMs));
    ws.onopen = () => this.#sendHello(ws);
    ws.onmessage = (e) => this.#onFrame(e.data);
    ws.onclose = (e) => this.#drop(e.code, e.reason);
    ws.onerror = () => {}; // a close event follows (and it stays set: see #drop)
  }

  async #sendHello(ws) {
    const hello = { op: 'hello' };
    let who = this.user ?? null;
    try {
      if (this.token != null) {
        hello.token = typeof this.token === 'function' ? await this.token() : this.token;
        who = tokenSubject(hello.token);
      } else {
        hello.user = this.user;
      }
    } catch (e) {
      if (ws !== this.ws) return;
      this.#emit('error', new PushonceError({ code: 'token', message: `token: ${e?.message ?? e}` }));
      this.#drop(GAVE_UP, 'no token');
      return;
    }
    if (ws !== this.ws) return; // dropped while the token was fetched
    const since = this.resume.since(who);
    if (since) hello.since = since;
    this.#send(hello);
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
    for (const name of ['deadline', 'heartbeat', 'ack']) this.#arm(name, null);
    this.ops.rejectAll(new PushonceError({ code: 'disconnected', message: reason || `closed (${code})` }));
    if (this.openedAt && Date.now() - this.openedAt >= this.stableMs) this.backoff.reset();
    this.openedAt = 0;
    if (code === AUTH_FAILED) this.stopped = true;
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
