// The client's transports and token refresh against fakes played by the test as the
// gateway: auto falls back from a WebSocket that never opens to SSE after two tries and
// remembers it; the SSE session (stream query, ops as POSTs, a close carried by an error
// event); RefreshSchedule's decisions; refreshes under fake timers, their retries, and a
// token of another user refused by the gateway.
import { test, beforeEach, afterEach, mock } from 'node:test';
import assert from 'node:assert/strict';
import { PushonceClient, RefreshSchedule, TransportChoice, sseUrlOf } from '../../gateway/web/pushonce.js';
import { FakeWebSocket, FakeEventSource, MemoryStorage, fakeFetch, fakeJwt, waitFor, sleep } from './fake_websocket.mjs';

const clients = [];

beforeEach(() => {
  FakeWebSocket.sockets = [];
  FakeEventSource.sources = [];
});

afterEach(() => {
  for (const c of clients.splice(0)) c.close();
  mock.timers.reset();
});

const welcome = (over = {}) => ({ type: 'welcome', user: 'alice', session: 'S1', epoch: 'E1', offset: 0, recovered: true, ...over });
const message = (id, offset) => ({ type: 'message', id, offset, kind: 'message', data: {}, ts: 1 });

function makeClient(over = {}) {
  const client = new PushonceClient({
    url: 'ws://gateway.test/ws',
    user: 'alice',
    WebSocket: FakeWebSocket,
    EventSource: FakeEventSource,
    fetch: fakeFetch(() => ({ status: 204 })),
    random: () => 0,
    ackIntervalMs: 10,
    ...over,
  });
  clients.push(client);
  const seen = { messages: [], states: [], errors: [], transports: [], refreshed: [] };
  client.on('message', (m) => seen.messages.push([m.id, m.offset]));
  client.on('state', (s, d) => seen.states.push(d?.code ? `${s}:${d.code}` : s));
  client.on('error', (e) => seen.errors.push(e.code));
  client.on('transport', (t) => seen.transports.push(t));
  client.on('refreshed', (r) => seen.refreshed.push(r.exp));
  return { client, seen };
}

// ---- transport choice ---------------------------------------------------------------------

test('sseUrlOf: the SSE URL beside the WebSocket one', () => {
  assert.equal(sseUrlOf('ws://h:8080/ws'), 'http://h:8080/sse');
  assert.equal(sseUrlOf('wss://h/ws'), 'https://h/sse');
  assert.equal(sseUrlOf('wss://h/app/ws?x=1'), 'https://h/app/sse?x=1');
});

test('TransportChoice: fixed modes stay; auto falls back after two failures before any open, and remembers', () => {
  assert.equal(new TransportChoice({ mode: 'sse' }).current, 'sse');
  const ws = new TransportChoice({ mode: 'websocket' });
  assert.equal(ws.failed('websocket'), false);
  assert.equal(ws.failed('websocket'), false);
  assert.equal(ws.current, 'websocket');
  assert.throws(() => new TransportChoice({ mode: 'carrier-pigeon' }), TypeError);

  const storage = new MemoryStorage();
  const auto = new TransportChoice({ storage });
  assert.equal(auto.current, 'websocket');
  assert.equal(auto.failed('websocket'), false);
  assert.equal(auto.failed('websocket'), true);
  assert.equal(auto.current, 'sse');
  assert.equal(storage.getItem('pushonce:transport'), 'sse');
  assert.equal(new TransportChoice({ storage }).current, 'sse'); // the next page load
  assert.equal(new TransportChoice({ storage, mode: 'websocket' }).current, 'websocket');
  assert.equal(new TransportChoice({ hasWebSocket: false }).current, 'sse');
  // A WebSocket that opened once works on this network: a gateway restarting (refusing
  // connections for a while) is no reason to fall back, however many attempts fail.
  const worked = new TransportChoice({ storage: new MemoryStorage() });
  worked.opened('websocket');
  for (let i = 0; i < 5; i++) assert.equal(worked.failed('websocket'), false);
  assert.equal(worked.current, 'websocket');
  const noSse = new TransportChoice({ hasSse: false });
  noSse.failed('websocket');
  assert.equal(noSse.failed('websocket'), false); // nowhere to fall back to
  assert.equal(noSse.current, 'websocket');
});

test('auto: a WebSocket that never opens twice → SSE, remembered, the session completes over it', async () => {
  const storage = new MemoryStorage();
  const fetch = fakeFetch((req) => (req.body.op === 'join'
    ? { body: { type: 'joined', queue: 'default', position: 1, ticket: 7, eta_s: null } }
    : { status: 204 }));
  const { client, seen } = makeClient({ storage, fetch });
  assert.equal(client.transport, 'websocket');
  client.connect();
  FakeWebSocket.last().serverClose(1006); // blocked: opened never fired
  await waitFor(() => FakeWebSocket.sockets.length === 2);
  assert.equal(client.transport, 'websocket');
  FakeWebSocket.last().serverClose(1006);
  await waitFor(() => FakeEventSource.sources.length === 1);
  assert.equal(FakeWebSocket.sockets.length, 2);
  assert.equal(client.transport, 'sse');
  assert.deepEqual(seen.transports, ['sse']);
  assert.equal(storage.getItem('pushonce:transport'), 'sse');

  const es = FakeEventSource.last();
  assert.equal(es.url, 'http://gateway.test/sse?user=alice');
  es.open();
  es.emit('welcome', welcome());
  assert.equal(client.state, 'open');
  es.emit('message', message('5', 1));
  assert.deepEqual(seen.messages, [['5', 1]]);
  const joined = await client.join();
  assert.equal(joined.ticket, 7);
  const post = fetch.requests.find((r) => r.body.op === 'join');
  assert.equal(post.url, 'http://gateway.test/sse/op');
  assert.deepEqual(post.body, { op: 'join', queue: 'default', session: 'S1', user: 'alice' });
  await waitFor(() => fetch.requests.some((r) => r.body.op === 'ack')); // 204: no frame
  assert.deepEqual(fetch.requests.find((r) => r.body.op === 'ack').body, { op: 'ack', offset: 1, session: 'S1', user: 'alice' });
  client.close();
  assert.equal(es.closed, true);

  // the next page load starts with SSE at once
  const again = makeClient({ storage }).client;
  again.connect();
  assert.equal(again.transport, 'sse');
  assert.equal(FakeWebSocket.sockets.length, 2);
  await waitFor(() => FakeEventSource.sources.length === 2);
});

test('sse: token and since in the query, Authorization on ops, 404 ends the session, a broken stream resumes', async () => {
  const jwt = fakeJwt({ sub: 'alice', exp: 2e9 });
  const storage = new MemoryStorage();
  storage.setItem('pushonce:resume', JSON.stringify({ user: 'alice', epoch: 'E1', offset: 3 }));
  let gone = false;
  const fetch = fakeFetch(() => (gone ? { status: 404, body: { error: 'not_found' } } : { body: { type: 'pong' } }));
  const { client, seen } = makeClient({ transport: 'sse', user: undefined, token: jwt, storage, fetch });
  client.connect();
  await waitFor(() => FakeEventSource.sources.length === 1);
  const es = FakeEventSource.last();
  assert.deepEqual(es.query, { token: jwt, since: 'E1:3' });
  es.open();
  es.emit('welcome', welcome({ offset: 4 }));
  es.emit('message', message('9', 4));
  await client.ping();
  assert.equal(fetch.requests[0].headers.authorization, `Bearer ${jwt}`);
  assert.equal(fetch.requests[0].body.user, undefined);
  gone = true;
  await assert.rejects(client.ping(), { code: 'not_found' });
  await waitFor(() => FakeEventSource.sources.length === 2); // reconnects, resuming
  assert.equal(es.closed, true);
  assert.deepEqual(FakeEventSource.last().query, { token: jwt, since: 'E1:4' });
  FakeEventSource.last().open();
  FakeEventSource.last().emit('welcome', welcome({ session: 'S2', offset: 4 }));
  FakeEventSource.last().fail(); // the stream broke: closed, reconnected by the client
  await waitFor(() => FakeEventSource.sources.length === 3);
  assert.equal(FakeEventSource.sources[1].closed, true);
  assert.deepEqual(seen.messages, [['9', 4]]);
  assert.deepEqual(seen.states.filter((s) => s.startsWith('resuming:')), ['resuming:1006', 'resuming:1006']);
});

test('sse: a close in an error event; 1008 token expired reconnects with a fresh token, other 1008 is final', async () => {
  let n = 0;
  const token = async () => fakeJwt({ sub: 'alice', exp: 2e9, n: ++n });
  const { client, seen } = makeClient({ transport: 'sse', user: undefined, token });
  client.connect();
  await waitFor(() => FakeEventSource.sources.length === 1);
  FakeEventSource.last().open();
  FakeEventSource.last().emit('welcome', welcome());
  FakeEventSource.last().emit('error', { type: 'error', code: 'closed', close: 1008, message: 'token expired' });
  await waitFor(() => FakeEventSource.sources.length === 2);
  assert.notEqual(FakeEventSource.sources[1].query.token, FakeEventSource.sources[0].query.token);
  FakeEventSource.last().open();
  FakeEventSource.last().emit('welcome', welcome({ session: 'S2' }));
  // an error frame without a close is just an error frame
  FakeEventSource.last().emit('error', { type: 'error', code: 'internal', message: 'x', op: '' });
  assert.equal(client.state, 'open');
  FakeEventSource.last().emit('error', { type: 'error', code: 'closed', close: 1008, message: 'disconnected' });
  assert.equal(client.state, 'closed');
  assert.deepEqual(seen.states.slice(-1), ['closed:1008']);
  assert.deepEqual(seen.errors, ['internal']);
});

test('websocket: 1008 token expired reconnects only when the token comes from a function', async () => {
  const jwt = fakeJwt({ sub: 'alice', exp: 2e9 });
  const fixed = makeClient({ user: undefined, token: jwt });
  fixed.client.connect();
  FakeWebSocket.last().open();
  FakeWebSocket.last().deliver(welcome());
  FakeWebSocket.last().serverClose(1008, 'token expired');
  assert.equal(fixed.client.state, 'closed');

  const fn = makeClient({ user: undefined, token: async () => jwt });
  fn.client.connect();
  FakeWebSocket.last().open();
  await sleep(0);
  FakeWebSocket.last().deliver(welcome());
  const before = FakeWebSocket.sockets.length;
  FakeWebSocket.last().serverClose(1008, 'token expired');
  assert.equal(fn.client.state, 'resuming');
  await waitFor(() => FakeWebSocket.sockets.length === before + 1);
});

// ---- refresh scheduling ---------------------------------------------------------------------

test('RefreshSchedule: at 80 % of iat..exp with jitter; without iat from now; none without exp', () => {
  const at = (random) => new RefreshSchedule({ random }).plan({ iat: 1000, exp: 1100 }, 1_000_000);
  assert.equal(at(() => 0.5), 80_000); // 80 % of 100 s
  assert.equal(at(() => 0), 75_000); // -5 %
  assert.equal(at(() => 0.999999), 85_000); // +5 %
  const s = new RefreshSchedule({ random: () => 0.5 });
  assert.equal(s.plan({ exp: 1100 }, 1_050_000), 40_000); // 80 % of the 50 s left
  assert.equal(s.plan({ iat: 1000, exp: 1100 }, 1_099_000), 0); // late already: at once
  assert.equal(s.plan({ sub: 'x' }, 0), null);
  assert.equal(s.plan(null, 0), null);
  assert.equal(s.retry(0), null); // nothing to retry without exp
});

test('RefreshSchedule: retries back off (half fixed, half random) and stop at exp', () => {
  const s = new RefreshSchedule({ random: () => 0, retryInitialMs: 1000, retryMaxMs: 8000 });
  s.plan({ iat: 0, exp: 100 }, 0); // exp at 100 000 ms
  assert.deepEqual([1, 2, 3, 4, 5].map(() => s.retry(50_000)), [500, 1000, 2000, 4000, 4000]);
  const r = new RefreshSchedule({ random: () => 0.999, retryInitialMs: 1000, retryMaxMs: 8000 });
  r.plan({ iat: 0, exp: 100 }, 0);
  assert.equal(r.retry(50_000), 1000);
  // close to exp, the tries fit before it; at exp, none
  assert.equal(r.retry(99_000), 500);
  assert.equal(r.retry(99_950), null);
  assert.equal(r.retry(100_000), null);
  // a new plan starts the backoff again
  r.plan({ iat: 0, exp: 200 }, 0);
  assert.equal(r.retry(150_000), 1000);
});

// ---- refresh on a live session, under fake timers ------------------------------------------

const flush = () => new Promise((r) => setImmediate(r));

function refreshingClient(tokens, over = {}) {
  mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: 1_000_000 });
  let i = 0;
  const token = async () => {
    const t = tokens[Math.min(i, tokens.length - 1)];
    i++;
    if (t instanceof Error) throw t;
    return t;
  };
  return makeClient({ user: undefined, token, heartbeatMs: 1e9, timeoutMs: 1e9, random: () => 0.5, ...over });
}

test('refresh: sent at 80 % of the lifetime over the live WebSocket, then again for the new token', async () => {
  const t1 = fakeJwt({ sub: 'alice', iat: 1000, exp: 1100 });
  const t2 = fakeJwt({ sub: 'alice', iat: 1080, exp: 1180 });
  const t3 = fakeJwt({ sub: 'alice', iat: 1160, exp: 1260 });
  const { client, seen } = refreshingClient([t1, t2, t3]);
  client.connect();
  const ws = FakeWebSocket.last();
  ws.open();
  await flush();
  assert.equal(ws.sent[0].token, t1);
  ws.deliver(welcome());
  mock.timers.tick(79_999);
  await flush();
  assert.equal(ws.sentOps('refresh').length, 0);
  mock.timers.tick(1);
  await flush();
  assert.deepEqual(ws.sentOps('refresh'), [{ op: 'refresh', token: t2 }]);
  ws.deliver({ type: 'refreshed', exp: 1_180_000 });
  await flush();
  assert.deepEqual(seen.refreshed, [1_180_000]);
  // the next one at 80 % of t2's life: 1080 + 80 = 1160 s
  mock.timers.tick(1_160_000 - Date.now() - 1);
  await flush();
  assert.equal(ws.sentOps('refresh').length, 1);
  mock.timers.tick(1);
  await flush();
  assert.deepEqual(ws.sentOps('refresh').at(-1), { op: 'refresh', token: t3 });
  assert.equal(client.state, 'open');
});

test('refresh: a failure is retried with backoff until exp; a token of another user is refused and retried', async () => {
  const t1 = fakeJwt({ sub: 'alice', iat: 1000, exp: 1100 });
  const other = fakeJwt({ sub: 'mallory', iat: 1080, exp: 1180 });
  const good = fakeJwt({ sub: 'alice', iat: 1082, exp: 1182 });
  const { client, seen } = refreshingClient([t1, new Error('identity provider down'), other, good], {
    refresh: { retryInitialMs: 1000, retryMaxMs: 4000 },
  });
  client.connect();
  const ws = FakeWebSocket.last();
  ws.open();
  await flush();
  ws.deliver(welcome());
  mock.timers.tick(80_000); // the token function throws
  await flush();
  assert.deepEqual(seen.errors, ['token']);
  assert.equal(ws.sentOps('refresh').length, 0);
  mock.timers.tick(750); // the first retry: 1000 ms cap, random 0.5 → 750 ms
  await flush();
  assert.deepEqual(ws.sentOps('refresh'), [{ op: 'refresh', token: other }]);
  // the gateway refuses another user's token; the session stays on t1
  ws.deliver({ type: 'error', code: 'bad_request', message: 'the refresh token is for another user', op: 'refresh' });
  await flush();
  assert.deepEqual(seen.errors, ['token', 'bad_request']);
  assert.equal(client.sessionToken, t1);
  mock.timers.tick(1499); // the second retry: 2000 ms cap → 1500 ms
  await flush();
  assert.equal(ws.sentOps('refresh').length, 1);
  mock.timers.tick(1);
  await flush();
  assert.deepEqual(ws.sentOps('refresh').at(-1), { op: 'refresh', token: good });
  ws.deliver({ type: 'refreshed', exp: 1_182_000 });
  await flush();
  assert.equal(client.sessionToken, good);
  assert.deepEqual(seen.refreshed, [1_182_000]);
});

test('refresh: retries stop at exp; the session is then closed by the gateway and reconnects', async () => {
  const t1 = fakeJwt({ sub: 'alice', iat: 1000, exp: 1010 });
  const { client } = refreshingClient([t1, new Error('down')], { refresh: { retryInitialMs: 1000, retryMaxMs: 1000 } });
  client.connect();
  const ws = FakeWebSocket.last();
  ws.open();
  await flush();
  ws.deliver(welcome());
  let tries = 0;
  client.on('error', () => tries++);
  for (let k = 0; k < 40; k++) {
    mock.timers.tick(500);
    await flush();
  }
  // 8 s to the first try, then one every 500-1000 ms until exp (10 s): a handful, then none
  assert.ok(tries >= 2 && tries <= 6, `tries ${tries}`);
  assert.equal(client.timers.refresh, null);
});

test('refresh over SSE: the op is POSTed with the old token; later ops carry the new one', async () => {
  const t1 = fakeJwt({ sub: 'alice', iat: 1000, exp: 1100 });
  const t2 = fakeJwt({ sub: 'alice', iat: 1080, exp: 1180 });
  const fetch = fakeFetch((req) => (req.body.op === 'refresh' ? { body: { type: 'refreshed', exp: 1_180_000 } } : { body: { type: 'pong' } }));
  const { client, seen } = refreshingClient([t1, t2], { transport: 'sse', fetch });
  client.connect();
  await flush();
  const es = FakeEventSource.last();
  assert.equal(es.query.token, t1);
  es.open();
  es.emit('welcome', welcome());
  mock.timers.tick(80_000);
  for (let k = 0; k < 5; k++) await flush();
  assert.deepEqual(seen.refreshed, [1_180_000]);
  const refresh = fetch.requests.find((r) => r.body.op === 'refresh');
  assert.equal(refresh.headers.authorization, `Bearer ${t1}`);
  assert.equal(refresh.body.token, t2);
  assert.equal(refresh.body.session, 'S1');
  const ping = client.ping();
  for (let k = 0; k < 5; k++) await flush();
  await ping;
  assert.equal(fetch.requests.at(-1).headers.authorization, `Bearer ${t2}`);
});

test('refresh: a token of months is not refreshed at once (setTimeout caps at 24.8 days)', async () => {
  const now = Math.floor(Date.now() / 1000);
  const long = fakeJwt({ sub: 'alice', iat: now, exp: now + 90 * 86400 });
  const { client } = makeClient({ user: undefined, token: async () => long });
  client.connect();
  const ws = FakeWebSocket.last();
  ws.open();
  await sleep(0);
  ws.deliver(welcome());
  await sleep(30);
  assert.equal(ws.sentOps('refresh').length, 0);
  assert.notEqual(client.timers.refresh, null); // armed: to look again in 24.8 days
});
