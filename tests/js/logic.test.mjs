// The socket-free logic of gateway/web/pushonce.js: backoff, id dedup, resume bookkeeping,
// ack batching, op/reply matching.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AckBatcher,
  Backoff,
  OpMatcher,
  PushonceError,
  ResumeState,
  SeenIds,
  normalizeId,
  tokenSubject,
  waitWords,
} from '../../gateway/web/pushonce.js';

// ---- backoff ------------------------------------------------------------------------------

test('backoff: caps double from initialMs up to maxMs', () => {
  const b = new Backoff({ initialMs: 250, maxMs: 10000, random: () => 0 });
  const caps = [];
  for (let i = 0; i < 8; i++) {
    caps.push(b.cap());
    b.next();
  }
  assert.deepEqual(caps, [250, 500, 1000, 2000, 4000, 8000, 10000, 10000]);
});

test('backoff: full jitter spans [0, cap) with the injected random', () => {
  const draws = [0, 0.5, 0.999999];
  for (const r of draws) {
    const b = new Backoff({ initialMs: 250, maxMs: 10000, random: () => r });
    const delays = Array.from({ length: 7 }, () => b.next());
    const caps = [250, 500, 1000, 2000, 4000, 8000, 10000];
    assert.deepEqual(delays, caps.map((c) => Math.floor(r * c)));
  }
});

test('backoff: any random draw stays within bounds, even after many attempts', () => {
  let seed = 7;
  const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
  const b = new Backoff({ initialMs: 100, maxMs: 3000, random });
  for (let i = 0; i < 2000; i++) {
    const cap = b.cap();
    const d = b.next();
    assert.ok(Number.isInteger(d) && d >= 0 && d < cap && cap <= 3000, `attempt ${i}: ${d} / ${cap}`);
  }
});

test('backoff: reset starts again from initialMs', () => {
  const b = new Backoff({ initialMs: 250, maxMs: 10000, random: () => 0.999999 });
  b.next();
  b.next();
  b.next();
  assert.equal(b.cap(), 2000);
  b.reset();
  assert.equal(b.cap(), 250);
  assert.equal(b.next(), 249);
});

// ---- dedup --------------------------------------------------------------------------------

test('ids: compared as numbers written in decimal, never as other strings', () => {
  assert.equal(normalizeId('007'), '7');
  assert.equal(normalizeId('000'), '0');
  assert.equal(normalizeId(10), '10');
  const seen = new SeenIds(10);
  assert.equal(seen.add('9'), true);
  assert.equal(seen.has('10'), false); // "9" and "10" are different ids
  assert.equal(seen.add('10'), true);
  assert.equal(seen.add('09'), false); // the same id as "9"
  assert.equal(seen.has('010'), true);
  assert.equal(seen.add('90'), true);
  assert.equal(seen.size, 3);
});

test('ids: the set is bounded and forgets the oldest first', () => {
  const seen = new SeenIds(3);
  for (const id of ['1', '2', '3', '4']) assert.equal(seen.add(id), true);
  assert.equal(seen.size, 3);
  assert.equal(seen.has('1'), false);
  assert.deepEqual(['2', '3', '4'].map((id) => seen.has(id)), [true, true, true]);
  assert.equal(seen.add('2'), false); // seen again: still known, nothing evicted
  seen.add('5');
  assert.equal(seen.has('2'), false);
  assert.equal(seen.has('5'), true);
});

// ---- resume bookkeeping -------------------------------------------------------------------

const welcome = (over = {}) => ({ type: 'welcome', user: 'alice', session: 's', epoch: 'E1', offset: 0, recovered: true, ...over });
const msg = (id, offset) => ({ type: 'message', id, offset, kind: 'message', data: {}, ts: 1 });

test('resume: no since before the first welcome; since {epoch, offset} after it', () => {
  const r = new ResumeState();
  assert.equal(r.since('alice'), null);
  assert.equal(r.onWelcome(welcome({ offset: 5 })), false);
  assert.deepEqual(r.since('alice'), { epoch: 'E1', offset: 0 });
  r.onMessage(msg('100', 1));
  assert.deepEqual(r.since('alice'), { epoch: 'E1', offset: 1 });
  assert.deepEqual(r.since(null), { epoch: 'E1', offset: 1 }); // user unknown (opaque token)
  assert.equal(r.since('bob'), null); // never alice's position for bob
});

test('resume: offsets advance; an offset <= the last is stale; a seen id is a duplicate', () => {
  const r = new ResumeState();
  r.onWelcome(welcome());
  assert.equal(r.onMessage(msg('9', 1)), 'deliver');
  assert.equal(r.onMessage(msg('10', 2)), 'deliver');
  assert.equal(r.onMessage(msg('10', 2)), 'stale');
  assert.equal(r.onMessage(msg('11', 1)), 'stale');
  assert.equal(r.onMessage(msg('9', 3)), 'duplicate'); // a new offset, an id already delivered
  assert.equal(r.offset, 3); // a duplicate still moves the offset (it is acked too)
  assert.equal(r.onMessage(msg('12', 5)), 'deliver');
  assert.equal(r.onMessage({ type: 'message', id: '13' }), 'stale'); // no offset: never taken
  assert.equal(r.offset, 5);
});

test('resume: a recovered welcome of the same epoch keeps the offset', () => {
  const r = new ResumeState({ saved: { user: 'alice', epoch: 'E1', offset: 7 } });
  assert.deepEqual(r.since('alice'), { epoch: 'E1', offset: 7 });
  assert.equal(r.onWelcome(welcome({ offset: 9 })), false);
  assert.equal(r.offset, 7);
  assert.equal(r.onMessage(msg('1', 8)), 'deliver');
});

test('resume: a new epoch is a resync; offsets restart from the new basis', () => {
  const r = new ResumeState({ saved: { user: 'alice', epoch: 'E1', offset: 40 } });
  r.seen.add('500');
  assert.equal(r.onWelcome(welcome({ epoch: 'E2', offset: 3, recovered: false })), true);
  assert.equal(r.epoch, 'E2');
  assert.equal(r.offset, 0);
  assert.equal(r.onMessage(msg('600', 2)), 'deliver'); // replayed after the last ack: new here
  assert.equal(r.onMessage(msg('500', 3)), 'duplicate'); // the id dedup still holds
  assert.deepEqual(r.since('alice'), { epoch: 'E2', offset: 3 });
});

test('resume: an epoch change is a resync even if the welcome said recovered', () => {
  const r = new ResumeState({ saved: { user: 'alice', epoch: 'E1', offset: 4 } });
  assert.equal(r.onWelcome(welcome({ epoch: 'E2' })), true);
  assert.equal(r.offset, 0);
});

test('resume: recovered:false in the same epoch (trimmed, or offset beyond latest) is a resync', () => {
  const r = new ResumeState({ saved: { user: 'alice', epoch: 'E1', offset: 50 } });
  assert.equal(r.onWelcome(welcome({ offset: 20, recovered: false })), true);
  assert.equal(r.offset, 0);
  assert.equal(r.onMessage(msg('77', 21)), 'deliver'); // the next live message is not dropped
});

test('resume: a first welcome without since is not a resync unless not recovered', () => {
  assert.equal(new ResumeState().onWelcome(welcome({ epoch: 'E9' })), false);
  assert.equal(new ResumeState().onWelcome(welcome({ recovered: false })), true);
});

test('resume: state saved for another user is not used', () => {
  const r = new ResumeState({ saved: { user: 'bob', epoch: 'E1', offset: 9 } });
  r.seen.add('5');
  assert.equal(r.since('alice'), null);
  assert.equal(r.onWelcome(welcome({ epoch: 'E7' })), false); // a fresh start, not a loss
  assert.equal(r.offset, 0);
  assert.equal(r.seen.has('5'), false);
  assert.deepEqual(JSON.parse(JSON.stringify(r)), { user: 'alice', epoch: 'E7', offset: 0 });
});

test('resume: malformed saved state is ignored', () => {
  for (const saved of [null, 'x', { epoch: 3, offset: 1 }, { epoch: 'E', offset: '2' }]) {
    assert.equal(new ResumeState({ saved }).since('alice'), null);
  }
});

test('tokenSubject: the sub claim of a JWT, or null', () => {
  const b64url = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  assert.equal(tokenSubject(`${b64url({ alg: 'HS256' })}.${b64url({ sub: 'zoë', exp: 1 })}.sig`), 'zoë');
  assert.equal(tokenSubject('not-a-jwt'), null);
  assert.equal(tokenSubject(`a.${b64url({ exp: 1 })}.c`), null);
});

// ---- ack batching -------------------------------------------------------------------------

test('acks: the first goes at once, then at most one per interval, of the highest offset', () => {
  const a = new AckBatcher(200);
  assert.equal(a.take(0), null); // nothing handled
  a.note(1);
  assert.equal(a.delay(1000), 0);
  assert.equal(a.take(1000), 1);
  a.note(2);
  a.note(4);
  a.note(3); // never goes back
  assert.equal(a.delay(1050), 150);
  assert.equal(a.take(1200), 4);
  assert.equal(a.take(1500), null); // nothing new
  assert.equal(a.pending(), false);
});

test('acks: reset forgets the old epoch', () => {
  const a = new AckBatcher(200);
  a.note(40);
  a.take(0);
  a.reset();
  a.note(2);
  assert.equal(a.delay(10), 0);
  assert.equal(a.take(10), 2);
});

// ---- op / reply matching ------------------------------------------------------------------

const pending = (m, op, queue) => new Promise((resolve, reject) => m.expect(op, queue, resolve, reject));

test('ops: replies settle the pending ops of their kind in order', async () => {
  const m = new OpMatcher();
  const j1 = pending(m, 'join', 'a');
  const j2 = pending(m, 'join', 'b');
  const pong = pending(m, 'ping');
  assert.equal(m.settle({ type: 'pong' }), true);
  assert.equal(m.settle({ type: 'joined', queue: 'a', position: 1, ticket: 1 }), true);
  assert.equal(m.settle({ type: 'joined', queue: 'b', position: 4, ticket: 2 }), true);
  assert.deepEqual(await pong, { type: 'pong' });
  assert.equal((await j1).position, 1);
  assert.equal((await j2).position, 4);
  assert.equal(m.settle({ type: 'pong' }), false); // no ping pending
});

test('ops: an error frame rejects the oldest pending op it names', async () => {
  const m = new OpMatcher();
  const join = pending(m, 'join', 'default');
  const accept1 = pending(m, 'accept');
  const accept2 = pending(m, 'accept');
  assert.equal(m.settle({ type: 'error', code: 'not_found', message: 'no pending assignment', op: 'accept' }), true);
  await assert.rejects(accept1, (e) => e instanceof PushonceError && e.code === 'not_found' && e.op === 'accept');
  assert.equal(m.settle({ type: 'accepted', id: '4097' }), true);
  assert.deepEqual(await accept2, { type: 'accepted', id: '4097' });
  assert.equal(m.settle({ type: 'error', code: 'conflict', message: 'already queued', op: 'join' }), true);
  await assert.rejects(join, { code: 'conflict', message: 'already queued' });
  // Errors of ops nobody waits for (a bad ack, an unparseable frame) are not matched.
  assert.equal(m.settle({ type: 'error', code: 'bad_request', message: 'x', op: 'ack' }), false);
  assert.equal(m.settle({ type: 'error', code: 'bad_request', message: 'x', op: '' }), false);
});

test('ops: a position frame settles the position op of its queue (push or reply)', async () => {
  const m = new OpMatcher();
  const a = pending(m, 'position', 'a');
  const b = pending(m, 'position', 'b');
  assert.equal(m.settle({ type: 'position', queue: 'b', position: 2 }), true);
  assert.equal(m.settle({ type: 'position', queue: 'c', position: 9 }), false); // a push only
  assert.equal(m.settle({ type: 'position', queue: 'a', position: 5 }), true);
  assert.equal((await a).position, 5);
  assert.equal((await b).position, 2);
});

test('ops: rejectAll fails every pending op', async () => {
  const m = new OpMatcher();
  const ops = [pending(m, 'join', 'q'), pending(m, 'ping'), pending(m, 'leave', 'q')];
  m.rejectAll(new PushonceError({ code: 'disconnected', message: 'gone' }));
  for (const p of ops) await assert.rejects(p, { code: 'disconnected' });
  assert.equal(m.settle({ type: 'pong' }), false);
});

// ---- estimated wait -----------------------------------------------------------------------

test('waitWords: eta_s in whole minutes, at least 1; nothing when there is none', () => {
  assert.equal(waitWords(null), '');
  assert.equal(waitWords(undefined), '');
  assert.equal(waitWords(0), 'about 1 min');
  assert.equal(waitWords(20), 'about 1 min');
  assert.equal(waitWords(150), 'about 3 min');
  assert.equal(waitWords(3600), 'about 60 min');
});
