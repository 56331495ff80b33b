// Scrolling a collection (Qdrant's scroll): the pure merge of the shards' pages, then over HTTP
// against a node with several shards: every document once, in id order, filtered or not,
// with vectors when asked, and the errors.
import fc from 'fast-check';
import t from 'tap';
import { compareStrings } from '../../src/core/keys.js';
import { mergeScroll } from '../../src/vector/scroll.js';
import { fcParams } from '../support/fc.js';
import { startTestNode } from '../support/node.js';

const doc = (id: string) => ({ id, text: '', metadata: {} });

t.test('property: paging through shards with mergeScroll lists every id once, in order', (t) => {
  fc.assert(
    fc.property(fc.uniqueArray(fc.string({ maxLength: 4, unit: 'grapheme' }), { maxLength: 60 }), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 7 }), (ids, shardCount, limit) => {
      // Ids spread over shards as a hash would: each shard holds its own, sorted as its keys are.
      const shards = Array.from({ length: shardCount }, (_, s) => ids.filter((_, i) => i % shardCount === s).sort(compareStrings));
      const listed: string[] = [];
      let offset: string | undefined;
      for (let pages = 0; pages <= ids.length + 1; pages++) {
        const pagesOf = shards.map((held) => held.filter((id) => offset === undefined || compareStrings(id, offset) >= 0).slice(0, limit + 1).map(doc));
        const page = mergeScroll(pagesOf, limit);
        listed.push(...page.documents.map((d) => d.id));
        if (page.documents.length > limit) return false;
        if (page.next === undefined) break;
        offset = page.next;
      }
      return JSON.stringify(listed) === JSON.stringify([...ids].sort(compareStrings));
    }),
    fcParams(),
  );
  t.end();
});

t.test('POST /vectordb/collections/:c/docs/scroll', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  t.equal((await node.request('PUT', '/vectordb/collections/s', { body: { dimensions: 2, num_shards: 3 } })).status, 201);
  const documents = Array.from({ length: 53 }, (_, i) => ({ id: `d${String(i).padStart(2, '0')}`, text: `doc ${i}`, metadata: { even: i % 2 === 0, i }, vector: [1, i] }));
  t.equal((await node.request('POST', '/vectordb/collections/s/docs', { body: { documents } })).status, 200);
  t.equal((await node.request('DELETE', '/vectordb/collections/s/docs/d07')).status, 200);
  const live = documents.filter((d) => d.id !== 'd07');

  const scrollAll = async (body: Record<string, unknown>) => {
    const seen: Record<string, any>[] = [];
    let offset: string | undefined;
    for (let pages = 0; pages < 100; pages++) {
      const r = await node.request('POST', '/vectordb/collections/s/docs/scroll', { body: { ...body, ...(offset === undefined ? {} : { offset }) } });
      if (r.status !== 200) throw new Error(`${r.status} ${r.text}`);
      seen.push(...r.body.documents);
      if (r.body.next_offset === null) return seen;
      offset = r.body.next_offset;
    }
    throw new Error('no last page');
  };
  const all = await scrollAll({ limit: 10 });
  t.same(all.map((d) => d.id), live.map((d) => d.id), 'every live document once, in id order, in pages of 10');
  t.same(all[3], { id: 'd03', text: 'doc 3', metadata: { even: false, i: 3 } }, 'text and metadata, no vector unless asked');
  const even = await scrollAll({ limit: 7, filter: { even: true } });
  t.same(even.map((d) => d.id), live.filter((d) => d.metadata.even).map((d) => d.id), 'a metadata filter');
  const first = await node.request('POST', '/vectordb/collections/s/docs/scroll', { body: { limit: 2, include_vector: true } });
  t.same(first.body.documents.map((d: { vector: number[] }) => d.vector), [[1, 0], [1, 1]], 'vectors when asked');
  t.equal(first.body.next_offset, 'd02', 'the id the next page starts at');
  const from = await node.request('POST', '/vectordb/collections/s/docs/scroll', { body: { offset: 'd07', limit: 1 } });
  t.same(from.body.documents.map((d: { id: string }) => d.id), ['d08'], 'an offset that is not a document starts at the next id');
  const none = await node.request('POST', '/vectordb/collections/s/docs/scroll', {});
  t.equal(none.status, 200, 'no body: the first page');
  t.equal(none.body.documents.length, 10, 'of 10 (Qdrant\'s default)');
  for (const body of [{ limit: 0 }, { limit: 1001 }, { offset: '' }, { filter: 'x' }, { other: 1 }]) {
    t.equal((await node.request('POST', '/vectordb/collections/s/docs/scroll', { body })).status, 400, JSON.stringify(body));
  }
  t.equal((await node.request('POST', '/vectordb/collections/nope/docs/scroll', { body: {} })).status, 404);
  t.equal((await node.request('GET', '/vectordb/collections/s/docs/scroll')).status, 404, 'GET is a document named scroll');
});
