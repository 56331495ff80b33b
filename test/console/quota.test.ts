// Gateway usage bars: fractions in [0, 1], amber near the quota, red at it.
import fc from 'fast-check';
import t from 'tap';
import { formatBytes, quotaBar, quotaBars } from '../../console/src/quota.js';
import { fcParams } from '../support/fc.js';

t.test('the fraction stays in [0, 1] and the tone follows it', (t) => {
  fc.assert(
    fc.property(fc.nat(10_000_000), fc.nat(10_000_000), (used, limit) => {
      const bar = quotaBar('x', used, limit);
      const toneOk = used >= limit ? bar.tone === 'full' : bar.fraction >= 0.8 ? bar.tone === 'warn' : bar.tone === 'ok';
      return bar.fraction >= 0 && bar.fraction <= 1 && toneOk;
    }),
    fcParams(),
  );
  t.end();
});

t.test('a tenant usage becomes three bars', (t) => {
  const bars = quotaBars({ vector_count: 3, collection_count: 1, storage_bytes: 1_048_576 }, { rpm_limit: 100, max_vectors: 10, max_collections: 1, max_storage_mb: 4 });
  t.same(
    bars.map((b) => [b.label, b.fraction, b.tone, b.text]),
    [
      ['Vectors', 0.3, 'ok', '3 of 10'],
      ['Collections', 1, 'full', '1 of 1'],
      ['Storage', 0.25, 'ok', '1.0 MiB of 4.0 MiB'],
    ],
  );
  t.equal(quotaBar('zero', 0, 0).tone, 'full', 'a zero quota admits nothing');
  t.same([formatBytes(0), formatBytes(1023), formatBytes(1536), formatBytes(1024 ** 3)], ['0 B', '1023 B', '1.5 KiB', '1.0 GiB']);
  t.end();
});
