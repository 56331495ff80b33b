// The keys checker finds each kind of anomaly, and lets unknown outcomes go either way.
import t from 'tap';
import { type KeyOp, type Outcome, checkKeys } from '../../../chaos/checker/keys.js';

const create = (keyId: string, outcome: Outcome = 'ok', at = 0): KeyOp => ({ kind: 'create', node: 'n1', invokeMs: at, completeMs: at + 10, outcome, keyId });
const revoke = (keyId: string, outcome: Outcome, at: number): KeyOp => ({ kind: 'revoke', node: 'n2', invokeMs: at, completeMs: at + 10, outcome, keyId });
const check = (keyId: string, at: number, result: 'valid' | 'invalid' | 'unavailable', phantom = false): KeyOp => ({ kind: 'check', node: 'n3', invokeMs: at, completeMs: at + 5, outcome: result === 'unavailable' ? 'fail' : 'ok', keyId, phantom, result });
const final = (keyId: string, result: 'valid' | 'invalid' | 'unavailable'): KeyOp => ({ kind: 'final', node: 'n1', keyId, result });
const types = (h: KeyOp[]) => checkKeys(h).anomalies.map((a) => a.type);

t.test('a clean history has no anomalies', (t) => {
  t.same(types([create('a'), check('a', 20, 'valid'), revoke('a', 'ok', 30), check('a', 41, 'invalid'), final('a', 'invalid'), create('b'), final('b', 'valid')]), []);
  t.end();
});

t.test('a revoked key used after the acknowledgement', (t) => {
  t.same(types([create('a'), revoke('a', 'ok', 30), check('a', 41, 'valid')]), ['revoked-accepted']);
  // Concurrent with the revoke (invoked before its acknowledgement): either way is fine.
  t.same(types([create('a'), revoke('a', 'ok', 30), check('a', 35, 'valid')]), []);
  t.end();
});

t.test('unknown and failed revokes may go either way; acknowledged keys must survive', (t) => {
  t.same(types([create('a'), revoke('a', 'unknown', 30), check('a', 100, 'valid'), final('a', 'invalid')]), []);
  t.same(types([create('a'), revoke('a', 'fail', 30), final('a', 'valid')]), []);
  t.same(types([create('a'), final('a', 'invalid')]), ['lost-key']);
  t.same(types([create('a', 'unknown'), final('a', 'invalid')]), [], 'an unknown create may be lost');
  t.same(types([create('a'), revoke('a', 'ok', 30), final('a', 'valid')]), ['revoked-present']);
  t.end();
});

t.test('phantoms and a node that cannot vouch after healing', (t) => {
  t.same(types([check('zz', 5, 'valid', true)]), ['phantom-accepted']);
  t.same(types([check('zz', 5, 'invalid', true), create('a'), final('a', 'unavailable')]), ['final-unavailable']);
  t.end();
});
