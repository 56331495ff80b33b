// The console's SSE reading (console/src/sse.ts): events come out whole however the bytes are
// chunked, and a changes feed shows exactly the changes its cursor covers, so resuming from
// the cursor neither skips nor repeats one (a database's stream: a cursor on every event; a
// VDB's: on the last event of each page).
import fc from 'fast-check';
import t from 'tap';
import { type SseEvent, feedStep, takeEvents } from '../../console/src/sse.js';
import { fcParams } from '../support/fc.js';

const HEARTBEAT = ': heartbeat\n\n';

/** One event as the node writes it (docdb-changes.ts, vdb.ts): `id:`, `event:`, one `data:` line each. */
function serialise(e: SseEvent): string {
  return `${e.id === undefined ? '' : `id: ${e.id}\n`}event: ${e.type}\n${e.data.split('\n').map((l) => `data: ${l}\n`).join('')}\n`;
}

/** `text` cut at `cuts` (positions, any order, repeats allowed). */
function chunked(text: string, cuts: number[]): string[] {
  const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
  return [0, ...at].map((from, i) => text.slice(from, [...at, text.length][i]));
}

/** Feeds the chunks one by one, as the console's reader loop does. */
function readAll(chunks: string[]): SseEvent[] {
  const out: SseEvent[] = [];
  let buffer = '';
  for (const chunk of chunks) {
    const { events, rest } = takeEvents(buffer + chunk);
    out.push(...events);
    buffer = rest;
  }
  return out;
}

const noNewline = fc.string({ maxLength: 12 }).filter((s) => !s.includes('\n'));
const arbEvent: fc.Arbitrary<SseEvent> = fc.record({
  type: fc.constantFrom('change', 'error', 'message'),
  data: fc.array(noNewline, { minLength: 1, maxLength: 3 }).map((lines) => lines.join('\n')),
  id: fc.option(noNewline.filter((s) => s !== ''), { nil: undefined }),
});

t.test('events come out whole and in order however the stream is chunked', (t) => {
  fc.assert(
    fc.property(fc.array(fc.tuple(arbEvent, fc.boolean()), { maxLength: 20 }), fc.array(fc.nat(), { maxLength: 30 }), (items, cuts) => {
      const text = `: stream open\n\n${items.map(([e, beat]) => serialise(e) + (beat ? HEARTBEAT : '')).join('')}`;
      const read = readAll(chunked(text, cuts));
      return JSON.stringify(read) === JSON.stringify(items.map(([e]) => e));
    }),
    fcParams(),
  );
  t.end();
});

t.test('an unfinished event stays in the buffer', (t) => {
  t.same(takeEvents('event: change\ndata: {"id":"a"}\n'), { events: [], rest: 'event: change\ndata: {"id":"a"}\n' });
  t.same(takeEvents(': heartbeat\n\nid: 7\n\nevent: chan'), { events: [{ type: 'message', data: '', id: '7' }], rest: 'event: chan' });
  t.end();
});

interface Change {
  id: string;
  seq: string;
}

/**
 * A feed of pages as one stream: a database's puts each change's seq as the cursor; a VDB's
 * names its cursor once a page (`c1-<page>`, no change's seq), on the page's last event.
 */
function feedText(pages: Change[][], style: 'db' | 'vdb'): { text: string; covered: Map<string, number> } {
  const covered = new Map<string, number>();
  let count = 0;
  let text = ': stream open\n\n';
  pages.forEach((page, p) => {
    page.forEach((c, i) => {
      count++;
      const id = style === 'db' ? c.seq : i === page.length - 1 ? `c1-${p}` : undefined;
      if (id !== undefined) covered.set(id, count);
      text += serialise({ type: 'change', data: JSON.stringify(c), id }) + (i % 3 === 2 ? HEARTBEAT : '');
    });
  });
  return { text, covered };
}

const arbPages = fc
  .array(fc.array(fc.constant(0), { minLength: 1, maxLength: 6 }), { maxLength: 8 })
  .map((pages) => {
    let n = 0;
    return pages.map((page) => page.map(() => ({ id: `d${n % 5}`, seq: `{timestamp,${1_000 + n},${n++ % 2}}` })));
  });

t.test('a feed shows exactly what its cursor covers, at every chunk, in both styles', (t) => {
  fc.assert(
    fc.property(arbPages, fc.constantFrom('db' as const, 'vdb' as const), fc.array(fc.nat(), { maxLength: 40 }), (pages, style, cuts) => {
      const all = pages.flat();
      const { text, covered } = feedText(pages, style);
      let buffer = '';
      let held: Change[] = [];
      let cursor: string | undefined;
      const shown: Change[] = [];
      for (const chunk of chunked(text, cuts)) {
        const { events, rest } = takeEvents(buffer + chunk);
        buffer = rest;
        const step = feedStep(held, events, (d) => JSON.parse(d) as Change);
        held = step.held;
        shown.push(...step.shown);
        cursor = step.cursor ?? cursor;
        // Resuming here from `cursor` would bring exactly the changes not shown yet.
        const upTo = cursor === undefined ? 0 : covered.get(cursor)!;
        if (JSON.stringify(shown) !== JSON.stringify(all.slice(0, upTo))) return false;
        if (step.error !== undefined) return false;
      }
      return shown.length === all.length && held.length === 0;
    }),
    fcParams(),
  );
  t.end();
});

t.test('the node\'s error event stops the feed with its message', (t) => {
  const events = takeEvents('event: change\ndata: {"id":"a"}\n\nevent: error\ndata: {"error":"not_found","message":"database gone","last_seq":"c1-x"}\n\n').events;
  const step = feedStep<{ id: string }>([], events, (d) => JSON.parse(d) as { id: string });
  t.equal(step.error, 'the feed stopped: not_found: database gone');
  t.same(step.shown, [], 'a change no cursor covered is not shown');
  t.same(step.held, [{ id: 'a' }]);
  t.equal(feedStep([], takeEvents('event: error\ndata: oops\n\n').events, (d) => d).error, 'the feed stopped: oops');
  t.end();
});
