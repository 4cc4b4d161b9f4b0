// A stand-in for the browser WebSocket class, driven by the test as "the gateway".
// Every instance is recorded in FakeWebSocket.sockets; frames the client sends are kept
// parsed in `sent`.

export class FakeWebSocket {
  static sockets = [];

  static last() {
    return FakeWebSocket.sockets.at(-1);
  }

  constructor(url) {
    this.url = url;
    this.readyState = 0; // CONNECTING
    this.sent = [];
    this.closedWith = null; // the code the client closed with, once it did
    this.sentAtClose = null; // how many frames it had sent by then
    this.pongsLeft = 0; // pings the "gateway" answers (asynchronously, as a real one)
    this.onopen = this.onmessage = this.onclose = this.onerror = null;
    FakeWebSocket.sockets.push(this);
  }

  // ---- the client's side ----
  send(text) {
    if (this.readyState !== 1) throw new Error('send on a socket that is not open');
    const frame = JSON.parse(text);
    this.sent.push(frame);
    if (frame.op === 'ping' && this.pongsLeft > 0) {
      this.pongsLeft--;
      queueMicrotask(() => this.deliver({ type: 'pong' }));
    }
  }

  close(code) {
    this.closedWith = code ?? 1005;
    this.sentAtClose = this.sent.length;
    this.readyState = 3;
  }

  // ---- the gateway's side ----
  open() {
    this.readyState = 1;
    this.onopen?.({});
  }

  deliver(frame) {
    this.onmessage?.({ data: typeof frame === 'string' ? frame : JSON.stringify(frame) });
  }

  serverClose(code = 1006, reason = '') {
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }

  /** The frames sent with this op. */
  sentOps(op) {
    return this.sent.filter((f) => f.op === op);
  }
}

/** A Storage-like map (sessionStorage's getItem/setItem). */
export class MemoryStorage {
  constructor() {
    this.map = new Map();
  }
  getItem(k) {
    return this.map.has(k) ? this.map.get(k) : null;
  }
  setItem(k, v) {
    this.map.set(k, String(v));
  }
}

/** Resolves after ms milliseconds (timers of the client run meanwhile). */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Resolves once cond() holds (checked every millisecond); rejects after timeoutMs. */
export async function waitFor(cond, timeoutMs = 2000) {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${cond}`);
    await sleep(1);
  }
}

/**
 * A stand-in for EventSource, driven by the test as the gateway's SSE stream: open(),
 * emit(type, data) ('welcome', 'message', 'position', 'error'), fail() (the stream broke).
 */
export class FakeEventSource {
  static sources = [];

  static last() {
    return FakeEventSource.sources.at(-1);
  }

  constructor(url) {
    this.url = url;
    this.listeners = new Map();
    this.closed = false;
    this.onopen = null;
    FakeEventSource.sources.push(this);
  }

  addEventListener(type, fn) {
    if (!this.listeners.has(type)) this.listeners.set(type, []);
    this.listeners.get(type).push(fn);
  }

  close() {
    this.closed = true;
  }

  /** The query parameters of the stream's URL. */
  get query() {
    return Object.fromEntries(new URL(this.url).searchParams);
  }

  open() {
    this.onopen?.({});
  }

  emit(type, data) {
    const e = { type, data: typeof data === 'string' ? data : JSON.stringify(data) };
    for (const fn of this.listeners.get(type) ?? []) fn(e);
  }

  fail() {
    for (const fn of this.listeners.get('error') ?? []) fn({ type: 'error' });
  }
}

/**
 * A fetch for POST /sse/op: records each request ({url, headers, body parsed}) and answers
 * with reply(request) → {status, body} (body an object, sent as JSON; none for 204).
 */
export function fakeFetch(reply) {
  const f = async (url, init) => {
    const req = { url, headers: init.headers, body: JSON.parse(init.body) };
    f.requests.push(req);
    const { status = 200, body } = reply(req);
    const text = body === undefined ? '' : JSON.stringify(body);
    return { status, ok: status >= 200 && status < 300, text: async () => text };
  };
  f.requests = [];
  return f;
}

/** An unsigned JWT with these claims (the client only reads them). */
export function fakeJwt(claims) {
  const b64url = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${b64url({ alg: 'HS256', typ: 'JWT' })}.${b64url(claims)}.sig`;
}
