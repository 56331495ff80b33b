// Replication filters: `paths` (topic patterns, OR-ed) AND `query.where` (the query engine's
// matcher). Pure. A `paths` entry is `<field>/.../<value>`: the last segment is the value,
// the others the field path; `+` matches one level, a final `#` any rest (the original's
// MQTT-style topics). A value segment matches a scalar whose text form equals it, or an
// array holding such a scalar.
import { FirkinError } from '../../core/errors.js';
import type { Condition, Json } from '../query/ast.js';
import { matches } from '../query/match.js';
import { parseWhere } from '../query/parse.js';
import { isPlainObject } from '../../core/values.js';

const FILTER_LIMITS = { pathsMax: 64, pathSegmentsMax: 32, pathBytesMax: 1024 } as const;

export interface ReplicationFilter {
  /** Each entry split on `/`; empty = no path restriction. */
  readonly paths: readonly (readonly string[])[];
  readonly where: Condition | undefined;
  /** The filter as given, normalised: part of the replication id and echoed in task listings. */
  readonly raw: { paths?: string[]; query?: { where: unknown } } | undefined;
}

const NO_FILTER: ReplicationFilter = { paths: [], where: undefined, raw: undefined };

const bad = (message: string) => new FirkinError('bad_request', message);

function parsePathPattern(raw: unknown, where: string): string[] {
  if (typeof raw !== 'string' || raw === '' || Buffer.byteLength(raw) > FILTER_LIMITS.pathBytesMax) {
    throw bad(`${where} must be a non-empty string like "type/user" (at most ${FILTER_LIMITS.pathBytesMax} bytes)`);
  }
  const segments = raw.split('/');
  if (segments.length < 2) throw bad(`${where} ${JSON.stringify(raw)} must have the form <field>/<value>`);
  if (segments.length > FILTER_LIMITS.pathSegmentsMax) throw bad(`${where} has more than ${FILTER_LIMITS.pathSegmentsMax} segments`);
  segments.forEach((s, i) => {
    if (s === '#' && i !== segments.length - 1) throw bad(`${where}: # may only be the last segment`);
  });
  if (segments[0] === '#' || segments[0] === '+') throw bad(`${where}: the first segment must name a field`);
  return segments;
}

/** Parse `{paths?, query?: {where}}`; undefined or `{}` is no filter. Bad input is a 400. */
export function parseFilter(raw: unknown): ReplicationFilter {
  if (raw === undefined || raw === null) return NO_FILTER;
  if (!isPlainObject(raw)) throw bad('filter must be an object {paths?: [...], query?: {where: [...]}}');
  for (const key of Object.keys(raw)) {
    if (key !== 'paths' && key !== 'query') throw bad(`filter: unknown field ${JSON.stringify(key)} (expected paths, query)`);
  }
  let paths: string[][] = [];
  let rawPaths: string[] | undefined;
  if (raw.paths !== undefined) {
    if (!Array.isArray(raw.paths) || raw.paths.length > FILTER_LIMITS.pathsMax) throw bad(`filter.paths must be a list of at most ${FILTER_LIMITS.pathsMax} strings`);
    paths = raw.paths.map((p, i) => parsePathPattern(p, `filter.paths[${i}]`));
    rawPaths = [...new Set(raw.paths as string[])].sort();
  }
  let where: Condition | undefined;
  let rawQuery: { where: unknown } | undefined;
  if (raw.query !== undefined) {
    if (!isPlainObject(raw.query) || raw.query.where === undefined) throw bad('filter.query must be an object {where: [...]}');
    where = parseWhere(raw.query.where, 'filter.query.where');
    rawQuery = { where: raw.query.where };
  }
  if (paths.length === 0 && where === undefined) return NO_FILTER;
  const out: { paths?: string[]; query?: { where: unknown } } = {};
  if (rawPaths !== undefined && rawPaths.length > 0) out.paths = rawPaths;
  if (rawQuery !== undefined) out.query = rawQuery;
  return { paths, where, raw: out };
}

function scalarText(value: Json): string | undefined {
  if (value === null) return 'null';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

/** Does the topic pattern match somewhere in `node`? Walks with an explicit stack. */
export function matchesPath(body: Json, segments: readonly string[]): boolean {
  const stack: { node: Json; at: number }[] = [{ node: body, at: 0 }];
  while (stack.length > 0) {
    const { node, at } = stack.pop()!;
    const seg = segments[at]!;
    if (seg === '#') return true;
    if (Array.isArray(node)) {
      for (const item of node) stack.push({ node: item, at });
      continue;
    }
    if (node !== null && typeof node === 'object') {
      if (at === segments.length - 1) continue; // a value segment never matches an object
      const children = seg === '+' ? Object.values(node) : Object.hasOwn(node, seg) ? [node[seg]!] : [];
      for (const child of children) stack.push({ node: child, at: at + 1 });
      continue;
    }
    if (at === segments.length - 1 && (seg === '+' || scalarText(node) === seg)) return true;
  }
  return false;
}

/** Filters apply to a live winner body; see `docs/replication.md` for tombstones. */
export function passesFilter(filter: ReplicationFilter, body: Json): boolean {
  if (filter.paths.length > 0 && !filter.paths.some((p) => matchesPath(body, p))) return false;
  return filter.where === undefined || matches(body, filter.where);
}

export function isFiltered(filter: ReplicationFilter): boolean {
  return filter.raw !== undefined;
}
