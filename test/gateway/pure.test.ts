// The small pure parts: quota math against a naive statement of the rules, and the per-name
// lock (one at a time per name, in arrival order, names independent).
import fc from 'fast-check';
import t from 'tap';
import { embedderUrlAllowed } from '../../src/gateway/embedder-urls.js';
import { collectionQuotaError, documentBytes, writeQuotaError } from '../../src/gateway/quota.js';
import { fcParams } from '../support/fc.js';

const MB = 1024 * 1024;

t.test('writeQuotaError refuses exactly when a limit would be crossed', (t) => {
  fc.assert(
    fc.property(
      fc.record({ vector_count: fc.nat(1000), storage_bytes: fc.nat(5 * MB), collection_count: fc.nat(20) }),
      fc.record({ max_vectors: fc.nat(1000), max_storage_mb: fc.nat(5), max_collections: fc.nat(20), rpm_limit: fc.constant(1) }),
      fc.nat(50),
      fc.integer({ min: -MB, max: MB }),
      (u, limits, newVectors, deltaBytes) => {
        const usage = { tenant_id: 't', ...u };
        const vectorsOk = newVectors === 0 || u.vector_count + newVectors <= limits.max_vectors;
        const bytesOk = deltaBytes <= 0 || u.storage_bytes + deltaBytes <= limits.max_storage_mb * MB;
        const collectionsOk = u.collection_count < limits.max_collections;
        return (
          (writeQuotaError(usage, limits, { newVectors, deltaBytes }) === undefined) === (vectorsOk && bytesOk) &&
          (collectionQuotaError(usage, limits) === undefined) === collectionsOk
        );
      },
    ),
    fcParams(),
  );
  t.end();
});

t.test('documentBytes: id, text, metadata JSON in UTF-8, 4 bytes per dimension', (t) => {
  t.equal(documentBytes({ id: 'ab' }, 3), 2 + 12);
  t.equal(documentBytes({ id: 'é', text: 'héllo', metadata: { a: 1 } }, 0), 2 + 6 + 7);
  // As read back, a document written without text or metadata has '' and {}: the same size.
  t.equal(documentBytes({ id: 'ab', text: '', metadata: {} }, 3), documentBytes({ id: 'ab' }, 3));
  t.equal(documentBytes({ id: 'ab', metadata: null }, 3), documentBytes({ id: 'ab' }, 3));
  t.end();
});

t.test('embedder URLs: only under a listed prefix, whole path segments, http(s), no credentials', (t) => {
  const allowed = ['http://embed.internal:11434', 'https://api.openai.com/v1/'];
  for (const ok of ['http://embed.internal:11434', 'http://embed.internal:11434/', 'http://embed.internal:11434/api', 'https://api.openai.com/v1', 'https://api.openai.com/v1/embeddings']) {
    t.ok(embedderUrlAllowed(ok, allowed), ok);
  }
  for (const bad of [
    'http://embed.internal:11435',
    'http://embed.internal:114340',
    'http://embed.internal.evil.com:11434',
    'https://embed.internal:11434',
    'https://api.openai.com/v10',
    'https://api.openai.com',
    'http://user:pw@embed.internal:11434',
    'http://embed.internal:11434/?x=1',
    'file:///etc/passwd',
    'not a url',
  ]) {
    t.notOk(embedderUrlAllowed(bad, allowed), bad);
  }
  t.notOk(embedderUrlAllowed('http://embed.internal:11434', []), 'nothing listed: nothing allowed');
  t.end();
});
