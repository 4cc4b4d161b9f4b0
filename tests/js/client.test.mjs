// PushonceClient against a fake WebSocket played by the test as the gateway: hello/since,
// dedup across a reconnect, acks, ops, heartbeat, and when it stops reconnecting.
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { PushonceClient } from '../../gateway/web/pushonce.js';
import { FakeWebSocket, MemoryStorage, sleep, waitFor } from './fake_websocket.mjs';

const clients = [];

beforeEach(() => {
  FakeWebSocket.sockets = [];
});

afterEach(() => {
  for (const c of clients.splice(0)) c.close(); // even when an assertion failed midway
});

function makeClient(over = {}) {
  const client = new PushonceClient({
    url: 'ws://gateway.test/ws',
    user: 'alice',
    WebSocket: FakeWebSocket,
    random: () => 0, // reconnect at once
    ackIntervalMs: 10,
    ...over,
  });
  clients.push(client);
  const seen = { messages: [], states: [], resyncs: 0, errors: [], positions: [] };
  client.on('message', (m) => seen.messages.push([m.id, m.offset]));
  client.on('state', (s, detail) => seen.states.push(detail?.code ? `${s}:${detail.code}` : s));
  client.on('resync', () => seen.resyncs++);
  client.on('error', (e) => seen.errors.push(e.code));
  client.on('position', (p) => seen.positions.push(p.position));
  return { client, seen };
}

const welcome = (over = {}) => ({ type: 'welcome', user: 'alice', session: 's1', epoch: 'E1', offset: 0, recovered: true, ...over });
const message = (id, offset, kind = 'message', data = {}) => ({ type: 'message', id, offset, kind, data, ts: 1700000000000 });

test('connect, dedup, reconnect with since, replay: each id once, in offset order', async () => {
  const storage = new MemoryStorage();
  const { client, seen } = makeClient({ storage });
  client.connect();
  const s1 = FakeWebSocket.last();
  assert.equal(s1.url, 'ws://gateway.test/ws');
  s1.open();
  assert.deepEqual(s1.sent, [{ op: 'hello', user: 'alice' }]); // no since before a welcome
  s1.deliver(welcome());
  assert.equal(client.state, 'open');

  s1.deliver(message('9', 1));
  s1.deliver(message('10', 2));
  s1.deliver(message('9', 3)); // a duplicate id
  s1.deliver(message('10', 2)); // an old offset
  s1.deliver(message('11', 4));
  await waitFor(() => s1.sentOps('ack').at(-1)?.offset === 4); // the duplicate is acked too
  assert.deepEqual(JSON.parse(storage.getItem('pushonce:resume')), { user: 'alice', epoch: 'E1', offset: 4 });

  const join = client.join();
  s1.serverClose(1006);
  await assert.rejects(join, { code: 'disconnected' });
  assert.equal(client.state, 'resuming');
  await waitFor(() => FakeWebSocket.sockets.length === 2);
  const s2 = FakeWebSocket.last();
  s2.open();
  assert.deepEqual(s2.sent, [{ op: 'hello', user: 'alice', since: { epoch: 'E1', offset: 4 } }]);
  s2.deliver(welcome({ session: 's2', offset: 7 }));
  s2.deliver(message('9', 3)); // before since: the gateway should not, the client drops it
  s2.deliver(message('12', 5));
  s2.deliver(message('10', 6)); // a redelivered id under a new offset
  s2.deliver(message('13', 7));
  s1.deliver(message('99', 8)); // a late frame of the old socket is ignored
  client.close();

  assert.deepEqual(seen.messages, [['9', 1], ['10', 2], ['11', 4], ['12', 5], ['13', 7]]);
  assert.deepEqual(seen.states, ['connecting', 'open', 'resuming:1006', 'open', 'closed:1000']);
  assert.equal(seen.resyncs, 0);
  assert.equal(s2.sentOps('ack').at(-1).offset, 7); // the owed ack goes out on close()
  assert.equal(s2.closedWith, 1000);
  assert.deepEqual(JSON.parse(storage.getItem('pushonce:resume')), { user: 'alice', epoch: 'E1', offset: 7 });
});

test('a reload resumes from storage; another user does not inherit it', () => {
  const storage = new MemoryStorage();
  storage.setItem('pushonce:resume', JSON.stringify({ user: 'alice', epoch: 'E1', offset: 12 }));
  const { client, seen } = makeClient({ storage });
  client.connect();
  assert.deepEqual(seen.states, ['resuming']);
  FakeWebSocket.last().open();
  assert.deepEqual(FakeWebSocket.last().sent[0].since, { epoch: 'E1', offset: 12 });
  client.close();

  const bob = makeClient({ storage, user: 'bob' }).client;
  bob.connect();
  FakeWebSocket.last().open();
  assert.deepEqual(FakeWebSocket.last().sent[0], { op: 'hello', user: 'bob' });
  bob.close();
});

test('a token (or a function giving one) is sent instead of the user', async () => {
  const b64url = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const jwt = `${b64url({ alg: 'HS256', typ: 'JWT' })}.${b64url({ sub: 'alice', exp: 2e9 })}.sig`;
  const storage = new MemoryStorage();
  storage.setItem('pushonce:resume', JSON.stringify({ user: 'alice', epoch: 'E1', offset: 3 }));
  let calls = 0;
  const { client } = makeClient({ user: undefined, storage, token: async () => (calls++, jwt) });
  client.connect();
  FakeWebSocket.last().open();
  await sleep(0);
  assert.deepEqual(FakeWebSocket.last().sent, [{ op: 'hello', token: jwt, since: { epoch: 'E1', offset: 3 } }]);
  assert.equal(calls, 1);
  client.close();
});

test('recovered:false emits resync and takes the replay from the new basis', async () => {
  const storage = new MemoryStorage();
  storage.setItem('pushonce:resume', JSON.stringify({ user: 'alice', epoch: 'E1', offset: 30 }));
  const { client, seen } = makeClient({ storage });
  client.connect();
  const s = FakeWebSocket.last();
  s.open();
  s.deliver(welcome({ epoch: 'E2', offset: 2, recovered: false }));
  s.deliver(message('41', 1));
  s.deliver(message('42', 2));
  await waitFor(() => s.sentOps('ack').length > 0);
  assert.equal(seen.resyncs, 1);
  assert.deepEqual(seen.messages, [['41', 1], ['42', 2]]);
  assert.deepEqual(s.sentOps('ack'), [{ op: 'ack', offset: 2 }]);
  assert.deepEqual(JSON.parse(storage.getItem('pushonce:resume')), { user: 'alice', epoch: 'E2', offset: 2 });
  client.close();
});

test('failover: 1013 after offsets went back, then recovered:false: only the new message reaches the app', async () => {
  const { client, seen } = makeClient();
  client.connect();
  const s1 = FakeWebSocket.last();
  s1.open();
  s1.deliver(welcome());
  for (let i = 1; i <= 5; i++) s1.deliver(message(String(100 + i), i));
  // The promoted replica had only 1..3; the gateway sees offset 4 again with another id,
  // rotates the epoch and closes 1013.
  s1.serverClose(1013);
  await waitFor(() => FakeWebSocket.sockets.length === 2);
  const s2 = FakeWebSocket.last();
  s2.open();
  assert.deepEqual(s2.sent[0], { op: 'hello', user: 'alice', since: { epoch: 'E1', offset: 5 } });
  s2.deliver(welcome({ epoch: 'E2', offset: 4, recovered: false }));
  for (const [id, off] of [['101', 1], ['102', 2], ['103', 3], ['200', 4]]) s2.deliver(message(id, off));
  s2.deliver(message('201', 5));
  await waitFor(() => seen.messages.length === 7);
  assert.equal(seen.resyncs, 1);
  assert.deepEqual(seen.messages.slice(5), [['200', 4], ['201', 5]]);
  client.close();
});

test('ops: replies resolve in order, error frames reject the op they name', async () => {
  const { client, seen } = makeClient();
  await assert.rejects(client.join(), { code: 'not_connected' });
  client.connect();
  const s = FakeWebSocket.last();
  s.open();
  s.deliver(welcome());

  const join = client.join();
  const again = client.join();
  const pos = client.position('default');
  const accept = client.accept(4097);
  const ping = client.ping();
  assert.deepEqual(s.sent.slice(1), [
    { op: 'join', queue: 'default' },
    { op: 'join', queue: 'default' },
    { op: 'position', queue: 'default' },
    { op: 'accept', id: '4097' },
    { op: 'ping' },
  ]);
  s.deliver({ type: 'joined', queue: 'default', position: 3, ticket: 17 });
  s.deliver({ type: 'error', code: 'conflict', message: 'already queued', op: 'join' });
  s.deliver({ type: 'position', queue: 'default', position: 3 });
  s.deliver({ type: 'position', queue: 'default', position: 2 }); // a push: nothing pending
  s.deliver({ type: 'error', code: 'not_found', message: 'no pending assignment', op: 'accept' });
  s.deliver({ type: 'pong' });
  s.deliver({ type: 'error', code: 'bad_request', message: 'frame is not valid JSON', op: '' });
  s.deliver('not json');

  assert.deepEqual(await join, { type: 'joined', queue: 'default', position: 3, ticket: 17 });
  await assert.rejects(again, { name: 'PushonceError', code: 'conflict', op: 'join' });
  assert.equal((await pos).position, 3);
  await assert.rejects(accept, { code: 'not_found', message: 'no pending assignment' });
  assert.deepEqual(await ping, { type: 'pong' });
  assert.deepEqual(seen.positions, [3, 2]);
  assert.deepEqual(seen.errors, ['bad_request', 'bad_frame']);
  client.close();
});

test('assignment and expired events follow message', () => {
  const { client } = makeClient();
  const order = [];
  client.on('message', (m) => order.push(`message:${m.kind}`));
  client.on('assignment', (m) => order.push(`assignment:${m.data.resource}`));
  client.on('expired', (m) => order.push(`expired:${m.data.id}`));
  client.on('assignment', () => {
    throw new Error('a broken handler'); // logged; the others and the client carry on
  });
  client.connect();
  const s = FakeWebSocket.last();
  s.open();
  s.deliver(welcome());
  const errorLog = console.error;
  console.error = () => {};
  try {
    s.deliver(message('4097', 1, 'assignment', { queue: 'default', resource: 'room-1', meta: null, accept_by: null }));
  } finally {
    console.error = errorLog;
  }
  s.deliver(message('8193', 2, 'expired', { id: '4097', queue: 'default', resource: 'room-1' }));
  s.deliver(message('12289', 3, 'message', { text: 'hi' }));
  assert.deepEqual(order, ['message:assignment', 'assignment:room-1', 'message:expired', 'expired:4097', 'message:message']);
  client.close();
});

test('close() from inside a handler stops cleanly', async () => {
  const { client, seen } = makeClient();
  client.on('message', () => client.close());
  client.connect();
  const s = FakeWebSocket.last();
  s.open();
  s.deliver(welcome());
  s.deliver(message('1', 1));
  s.deliver(message('2', 2)); // after close(): ignored
  await sleep(20);
  assert.deepEqual(seen.messages, [['1', 1]]);
  assert.equal(client.state, 'closed');
  assert.equal(s.closedWith, 1000);
  assert.equal(FakeWebSocket.sockets.length, 1);
});

test('close code 1008 stops for good with the reason', async () => {
  const { client, seen } = makeClient({ user: 'mallory' });
  const closed = new Promise((resolve) => client.on('state', (s, d) => s === 'closed' && resolve(d)));
  client.connect();
  const s = FakeWebSocket.last();
  s.open();
  s.serverClose(1008, 'unknown user');
  assert.deepEqual(await closed, { code: 1008, reason: 'unknown user' });
  await sleep(20);
  assert.equal(FakeWebSocket.sockets.length, 1); // no reconnect
  assert.deepEqual(seen.states, ['connecting', 'closed:1008']);
});

test('other closes reconnect with growing, jittered delays', async () => {
  const { client } = makeClient({ random: () => 0.5, backoff: { initialMs: 20, maxMs: 40 } });
  client.connect();
  const t0 = Date.now();
  FakeWebSocket.last().serverClose(1006); // refused: no welcome, so no reset
  await sleep(5);
  assert.equal(FakeWebSocket.sockets.length, 1); // waits 0.5 * 20 = 10 ms
  await sleep(15);
  assert.equal(FakeWebSocket.sockets.length, 2);
  FakeWebSocket.last().serverClose(1013);
  await sleep(10);
  assert.equal(FakeWebSocket.sockets.length, 2); // waits 0.5 * 40 = 20 ms
  await sleep(20);
  assert.equal(FakeWebSocket.sockets.length, 3);
  assert.ok(Date.now() - t0 >= 30);
  client.close();
  assert.equal(client.state, 'closed');
  await sleep(30);
  assert.equal(FakeWebSocket.sockets.length, 3); // close() during a wait cancels it
});

test('heartbeat: a ping every period; silence past the timeout reconnects', async () => {
  const { client, seen } = makeClient({ heartbeatMs: 20, timeoutMs: 15 });
  client.connect();
  const s1 = FakeWebSocket.last();
  s1.pongsLeft = 1; // the first ping is answered, the second is not
  s1.open();
  s1.deliver(welcome());
  await waitFor(() => s1.closedWith !== null);
  assert.equal(s1.closedWith, 4000);
  assert.equal(s1.sent.slice(0, s1.sentAtClose).filter((f) => f.op === 'ping').length, 2);
  await waitFor(() => FakeWebSocket.sockets.length === 2);
  assert.deepEqual(seen.states.slice(0, 3), ['connecting', 'open', 'resuming:4000']);
  client.close();
});

test('no welcome within the timeout drops the connection and retries', async () => {
  const { client } = makeClient({ timeoutMs: 15 });
  client.connect();
  const s1 = FakeWebSocket.last();
  s1.open(); // the gateway never answers the hello
  await waitFor(() => FakeWebSocket.sockets.length === 2);
  assert.equal(s1.closedWith, 4000);
  client.close();
});

test('proof of work: the welcome challenge is solved before the join; a refusal with a fresh one is solved and retried', async () => {
  const { createHash } = await import('node:crypto');
  const { leadingZeroBits } = await import('../../gateway/web/pushonce.js');
  const solves = (prefix, nonce, bits) => leadingZeroBits(createHash('sha256').update(prefix + nonce).digest()) >= bits;
  const { client } = makeClient();
  const progress = [];
  client.on('pow', (p) => progress.push(p));
  client.connect();
  const s = FakeWebSocket.last();
  s.open();
  const c1 = { id: 'c1', prefix: 'c1.', bits: 8, expires_at: Date.now() + 60000 };
  s.deliver(welcome({ challenge: c1 }));
  const join = client.join();
  await waitFor(() => s.sent.length === 2);
  const first = s.sent[1];
  assert.equal(first.op, 'join');
  assert.equal(first.pow.id, 'c1');
  assert.ok(solves('c1.', first.pow.nonce, 8));
  assert.ok(progress.at(-1).done && progress.at(-1).bits === 8 && progress.at(-1).queue === 'default');
  // Refused (e.g. expired meanwhile) with a fresh challenge: solved and sent again.
  const c2 = { id: 'c2', prefix: 'c2.', bits: 6, expires_at: Date.now() + 60000 };
  s.deliver({ type: 'error', code: 'bad_request', message: 'expired', op: 'join', challenge: c2 });
  await waitFor(() => s.sent.length === 3);
  assert.equal(s.sent[2].pow.id, 'c2');
  assert.ok(solves('c2.', s.sent[2].pow.nonce, 6));
  s.deliver({ type: 'joined', queue: 'default', position: 1, ticket: 1 });
  assert.equal((await join).position, 1);
  // A challenge is used once: the next join goes without one.
  const again = client.join();
  await waitFor(() => s.sent.length === 4);
  assert.equal(s.sent[3].pow, undefined);
  s.deliver({ type: 'error', code: 'conflict', message: 'already queued', op: 'join' });
  await assert.rejects(again, { code: 'conflict' });
  client.close();
});
