// Aligned tables: every cell starts at its column's offset, columns are exactly as wide as
// their widest cell plus the gap, and no line carries trailing spaces or control characters.
import fc from 'fast-check';
import t from 'tap';
import { cleanCell, formatTable, widthOf } from '../../src/cli/table.js';
import { fcParams } from '../support/fc.js';

const GAP = 2;
const chars = (s: string) => Array.from(s);

const arbCell = fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.constantFrom('', ' a ', 'n1', 'http://127.0.0.1:8081', '\u001b[31mred', 'a\nb'));
const arbRows = fc.array(fc.array(arbCell, { maxLength: 6 }), { maxLength: 8 });

t.test('cells line up in columns as wide as their widest cell', (t) => {
  fc.assert(
    fc.property(arbRows, (rows) => {
      const lines = formatTable(rows);
      if (lines.length !== rows.length) return false;
      const clean = rows.map((row) => row.map(cleanCell));
      const columns = Math.max(0, ...rows.map((r) => r.length));
      const offsets: number[] = [0];
      for (let c = 0; c < columns; c++) offsets.push(offsets[c]! + Math.max(...clean.map((r) => widthOf(r[c] ?? ''))) + GAP);
      return lines.every((line, r) => {
        const l = chars(line);
        if (/\s$/.test(line) || /[\u0000-\u001f\u007f-\u009f]/.test(line)) return false;
        return clean[r]!.every((cell, c) => {
          const start = offsets[c]!;
          if (l.slice(start, start + widthOf(cell)).join('') !== cell) return false;
          // Between this cell's end and the next column only padding (or the line ends).
          const pad = l.slice(start + widthOf(cell), offsets[c + 1]!);
          return pad.every((ch) => ch === ' ');
        });
      });
    }),
    fcParams(),
  );
  t.end();
});

t.test('an example', (t) => {
  t.same(
    formatTable([
      ['NAME', 'STATUS', 'HEARTBEAT'],
      ['n1 *', 'up', '-'],
      ['node-two', 'suspect', '1.6s ago'],
      ['n3', '', ''],
    ]),
    ['NAME      STATUS   HEARTBEAT', 'n1 *      up       -', 'node-two  suspect  1.6s ago', 'n3'],
  );
  t.same(formatTable([]), []);
  t.equal(cleanCell(' \u001b[2Jn1\r\n '), '\uFFFD[2Jn1\uFFFD\uFFFD');
  t.end();
});
