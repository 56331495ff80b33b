// Query planning (pure): which posting-key ranges can produce the candidates of a query, and
// which one to scan. The executor measures each candidate scan (posting counts, capped) and
// `choosePlan` picks the smallest; every candidate is then checked against the body, so a
// scan only has to return a superset of the matches.
import { type KeyPart, type KeyRange, afterPrefix, encodeKey, prefixRange, stringPrefixRange } from '../../core/keys.js';
import type { Condition, Json, Path } from './ast.js';
import { ARRAY_SEGMENT, STRING_CHARS_MAX, TYPE_TAG, generalPath, leafKey } from './postings.js';

export interface Scan {
  /** Union of these ranges holds every match of the condition (maybe more). */
  readonly ranges: readonly KeyRange[];
  /**
   * The scan returns exactly the matching documents (no body check needed): equality on a
   * short scalar, numeric ranges, `exists`, short prefixes — on paths without array indexes.
   */
  readonly exact: boolean;
  /** Human-readable, for `_explain`. */
  readonly describe: string;
  /**
   * Set when every range is one value's postings (equality; `in` on distinct values, none
   * repeated): range i's keys are `prefix ++ encoded docId`, so they come in id order and
   * the id is the key past `idOffsets[i]` bytes.
   */
  readonly idOffsets?: readonly number[];
  /**
   * A test on the value held in each key (the part at byte `valueOffset`, followed by the
   * doc id): a key whose whole value fails it cannot make its document match, so the
   * document is no candidate unless another key of the scan keeps it. Values that may have
   * been truncated in the key are always kept (the body check decides).
   */
  readonly keyFilter?: { readonly valueOffset: number; readonly keep: (value: string) => boolean };
}

/** A string in a posting key is surely whole when shorter than any truncation leaves it. */
export function wholeInKey(value: string): boolean {
  return value.length < STRING_CHARS_MAX - 1; // truncation keeps 200 code units, 199 at a surrogate pair
}

export type Plan =
  | { readonly kind: 'full_scan'; readonly reason: string }
  | { readonly kind: 'index'; readonly scan: Scan; readonly estimate: number; readonly alternatives: number };

function base(db: string, path: Path): KeyPart[] {
  return [db, ...generalPath(path)];
}

function hasIndex(path: Path): boolean {
  return path.some((s) => typeof s === 'number');
}

const show = (path: Path) => path.map(String).join('.');

function existsScan(db: string, path: Path): Scan {
  return { ranges: [prefixRange(base(db, path))], exact: !hasIndex(path), describe: `exists ${show(path)}` };
}

/** Range of one scalar (or empty container) value at a path; undefined for non-empty containers. */
function valueRange(db: string, path: readonly KeyPart[], value: Json): { range: KeyRange; exact: boolean } | undefined {
  const leaf = leafKey(value);
  if (leaf === undefined) return undefined;
  const parts = [db, ...path, leaf.tag, ...(leaf.value === undefined ? [] : [leaf.value])];
  const truncated = typeof value === 'string' && value.length > STRING_CHARS_MAX;
  return { range: prefixRange(parts), exact: !truncated };
}

/**
 * The longest part of `prefix` every key of a string starting with it must also start with:
 * keys hold at least 199 code units of a long string (200, or 199 where a surrogate pair
 * would be cut), so at most 198, never ending inside a surrogate pair. `whole`: nothing was
 * cut, so the range decides the prefix exactly.
 */
export function keyPrefix(prefix: string): { prefix: string; whole: boolean } {
  const max = STRING_CHARS_MAX - 2;
  if (prefix.length <= max) return { prefix, whole: true };
  let cut = prefix.slice(0, max);
  const last = cut.charCodeAt(cut.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return { prefix: cut, whole: false };
}

/**
 * The literal text every match of an anchored pattern starts with (`^name12` -> `name12`),
 * or '' when there is none or the pattern is not simple enough to be sure: alternation
 * anywhere, groups, classes and escapes like `\d` end the literal, and a character followed
 * by a quantifier is left out (it may repeat zero times).
 */
export function anchoredLiteral(source: string): string {
  if (!source.startsWith('^') || source.includes('|')) return '';
  const chars = [...source.slice(1)]; // code points: a quantifier applies to a whole one
  let out = '';
  for (let i = 0; i < chars.length; i++) {
    let c = chars[i]!;
    let width = 1;
    if (c === '\\') {
      const next = chars[i + 1];
      // Only an escaped punctuation character is a literal (`\.`); `\d`, `\b`, `\x41`... end it.
      if (next === undefined || !/^[\^$.|?*+()[\]{}\\/-]$/u.test(next)) break;
      c = next;
      width = 2;
    } else if ('^$.|?*+()[]{}'.includes(c)) {
      break;
    }
    const after = chars[i + width];
    if (after !== undefined && '?*+{'.includes(after)) break;
    out += c;
    i += width - 1;
  }
  return out;
}

function comparisonScan(db: string, path: Path, op: '>' | '>=' | '<' | '<=', value: number | string): Scan {
  const tag = typeof value === 'number' ? TYPE_TAG.number : TYPE_TAG.string;
  const band = [...base(db, path), tag];
  const { gte: bandStart, lt: bandEnd } = prefixRange(band);
  // Truncated strings in keys make bounds on long operands inclusive (a superset).
  const long = typeof value === 'string' && value.length > STRING_CHARS_MAX;
  const v = typeof value === 'string' ? value.slice(0, STRING_CHARS_MAX) : value;
  const at = encodeKey([...band, v]);
  const after = afterPrefix([...band, v]);
  let range: KeyRange;
  switch (op) {
    case '>':
      range = { gte: long ? at : after, lt: bandEnd };
      break;
    case '>=':
      range = { gte: at, lt: bandEnd };
      break;
    case '<':
      range = { gte: bandStart, lt: long ? after : at };
      break;
    case '<=':
      range = { gte: bandStart, lt: after };
      break;
  }
  return { ranges: [range], exact: !long && !hasIndex(path) && typeof value === 'number', describe: `${show(path)} ${op} ${JSON.stringify(value)}` };
}

/** Fields starting with `_` (`_id`, `_rev`, ...) are metadata: they have no postings. */
function isMetadataPath(path: Path): boolean {
  return typeof path[0] === 'string' && path[0].startsWith('_');
}

/** The candidate scans of one condition, best guess first; [] when no index applies. */
export function scansFor(db: string, cond: Condition): Scan[] {
  if ('path' in cond && isMetadataPath(cond.path)) return [];
  switch (cond.kind) {
    case 'eq': {
      const r = valueRange(db, generalPath(cond.path), cond.value);
      if (r === undefined) return [{ ...existsScan(db, cond.path), exact: false, describe: `${show(cond.path)} = <container> via exists` }];
      return [{ ranges: [r.range], exact: r.exact && !hasIndex(cond.path), describe: `${show(cond.path)} = ${JSON.stringify(cond.value)}`, idOffsets: [r.range.gte.length] }];
    }
    case 'in': {
      const ranges: KeyRange[] = [];
      const seen = new Set<string>();
      let exact = !hasIndex(cond.path);
      for (const v of cond.values) {
        const r = valueRange(db, generalPath(cond.path), v);
        if (r === undefined) return [{ ...existsScan(db, cond.path), exact: false }];
        const id = r.range.gte.toString('latin1');
        if (seen.has(id)) continue; // a repeated value is one range (and is counted once)
        seen.add(id);
        ranges.push(r.range);
        exact &&= r.exact;
      }
      return [
        {
          ranges,
          exact: exact && ranges.length > 0,
          describe: `${show(cond.path)} in ${ranges.length} values`,
          idOffsets: ranges.map((r) => r.gte.length),
        },
      ];
    }
    case 'contains': {
      const arrayPath = [...generalPath(cond.path), ARRAY_SEGMENT];
      const r = valueRange(db, arrayPath, cond.value);
      if (r === undefined) return [{ ranges: [prefixRange([db, ...arrayPath])], exact: false, describe: `${show(cond.path)} contains <container>` }];
      return [{ ranges: [r.range], exact: r.exact && !hasIndex(cond.path), describe: `${show(cond.path)} contains ${JSON.stringify(cond.value)}` }];
    }
    case 'cmp':
      return [comparisonScan(db, cond.path, cond.op, cond.value)];
    case 'prefix': {
      const { prefix, whole } = keyPrefix(cond.value);
      const range = stringPrefixRange([...base(db, cond.path), TYPE_TAG.string], prefix);
      return [{ ranges: [range], exact: whole && !hasIndex(cond.path), describe: `${show(cond.path)} prefix ${JSON.stringify(cond.value)}` }];
    }
    case 'regex': {
      // Every string at the path, the pattern run on the value in the key; the body check
      // confirms (and decides values too long to be whole in a key).
      // An anchored literal start (`^abc...`) narrows the walk to that prefix's range.
      const bandParts = [...base(db, cond.path), TYPE_TAG.string];
      const band = prefixRange(bandParts);
      const pattern = cond.pattern;
      const literal = keyPrefix(anchoredLiteral(pattern.source)).prefix;
      const range = literal === '' ? band : stringPrefixRange(bandParts, literal);
      return [
        {
          ranges: [range],
          exact: false,
          describe: `${show(cond.path)} regex (${literal === '' ? 'strings at path' : `strings starting ${JSON.stringify(literal)}`}, pattern run on index keys)`,
          keyFilter: { valueOffset: band.gte.length, keep: (v) => pattern.test(v) },
        },
      ];
    }
    case 'exists':
      return [existsScan(db, cond.path)];
    case 'and':
      return cond.all.flatMap((c) => scansFor(db, c));
    case 'or': {
      const parts = cond.any.map((c) => scansFor(db, c)[0]);
      if (parts.length === 0 || parts.some((p) => p === undefined)) return [];
      return [{ ranges: parts.flatMap((p) => p!.ranges), exact: false, describe: `or of ${parts.length}` }];
    }
    case 'size':
    case 'mod':
    case 'type':
    case 'elemMatch':
    case 'allMatch':
    case 'keyMapMatch':
      // Each needs the field to be there: its postings narrow the candidates, the body decides.
      return [{ ...existsScan(db, cond.path), exact: false, describe: `${show(cond.path)} ${cond.kind} via exists` }];
    case 'ne': {
      if (cond.value !== null) return [];
      // CouchDB's `{"$gt": null}` (present, not null): every posting at or under the path but the null ones.
      const all = prefixRange(base(db, cond.path));
      const nulls = prefixRange([...base(db, cond.path), TYPE_TAG.null]);
      return [{ ranges: [{ gte: all.gte, lt: nulls.gte }, { gte: nulls.lt, lt: all.lt }], exact: !hasIndex(cond.path), describe: `${show(cond.path)} not null` }];
    }
    case 'missing':
    case 'not':
      return [];
  }
}

/** The top-level conjuncts of a query (nested `and`s flattened). */
export function conjuncts(cond: Condition): Condition[] {
  return cond.kind === 'and' ? cond.all.flatMap(conjuncts) : [cond];
}

/** Pick the scan with the fewest postings; a full scan when nothing is indexable. */
export function choosePlan(scans: readonly Scan[], estimates: readonly number[]): Plan {
  if (scans.length === 0) return { kind: 'full_scan', reason: 'no indexable condition' };
  let best = 0;
  for (let i = 1; i < scans.length; i++) if (estimates[i]! < estimates[best]!) best = i;
  return { kind: 'index', scan: scans[best]!, estimate: estimates[best]!, alternatives: scans.length - 1 };
}

/** True when the chosen scan alone decides the query: no body needs checking to count. */
export function planIsExact(plan: Plan, where: Condition): boolean {
  return plan.kind === 'index' && plan.scan.exact && conjuncts(where).length === 1;
}

/** Another condition's scan tests candidates by looking their keys up for this many values at most (`in`). */
const LOOKUP_VALUES_MAX = 8;
/**
 * What testing candidates against a scan costs, in keys read as strings (`Store.keyStringBatches`,
 * ~0.4 µs each here): a key read and decoded (a scan of several values) ~1.5 µs, a key looked up
 * ~1.7 µs, a candidate's body read and checked ~9 µs (docs/benchmarks.md, "Keys read as strings").
 */
const COST = { stringKey: 1, decodedKey: 3.5, lookup: 4, body: 20 } as const;

/** How another condition's scan tests a set of candidate ids, whichever costs least. */
export interface CandidateTest {
  /** Read the scan's keys for a set of ids, giving up past this many (undefined: not worth it: its size, known or the counting cap, is past what the others cost). */
  readonly readMax: number | undefined;
  /** Each candidate's key can be looked up (one value's postings, or a few values': the value's prefix, then the id). */
  readonly lookup: boolean;
}

/** How `scan` (holding `estimate` postings, at least) tests `candidates` ids. */
export function candidateTest(scan: Scan, estimate: number, candidates: number): CandidateTest {
  const lookup = scan.idOffsets !== undefined && scan.ranges.length <= LOOKUP_VALUES_MAX;
  const lookupCost = lookup ? candidates * scan.ranges.length * COST.lookup : Infinity;
  const readMax = Math.floor(Math.min(lookupCost, candidates * COST.body) / (scan.idOffsets !== undefined ? COST.stringKey : COST.decodedKey));
  return { readMax: estimate <= readMax ? readMax : undefined, lookup };
}

/** A test in words (`_explain`); `capped`: the scan's size is past the counting cap, so a read may be given up. */
export function describeTest(test: CandidateTest, capped: boolean): string {
  const otherwise = test.lookup ? 'look each candidate up' : 'check the candidates\' bodies';
  if (test.readMax === undefined) return otherwise;
  return capped ? `read its keys (up to ${test.readMax}), else ${otherwise}` : 'read its keys';
}
