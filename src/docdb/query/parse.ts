// Turns a `_find` / changes-filter body into the query tree, or a 400 naming the problem.
// Accepts the spec's `where` list ({path, op, value}, nested {and}/{or}/{not}) and the
// CouchDB-style `selector` ({"a.b": v}, {field: {"$gt": v}}, $and/$or/$not).
import RE2 from 're2';
import { FirkinError } from '../../core/errors.js';
import { unreachable } from '../../core/unreachable.js';
import { decodeBookmark } from './bookmark.js';
import { COMPARISONS, type Comparison, type Condition, type FindQuery, JSON_TYPES, type Json, type JsonType, type OrderKey, type Path, type Pattern } from './ast.js';
import { isPlainObject } from '../../core/values.js';

export const QUERY_LIMITS = {
  conditionsMax: 1_000,
  depthMax: 32,
  pathSegmentsMax: 64,
  segmentCharsMax: 1_024,
  inValuesMax: 10_000,
  regexCharsMax: 1_000,
  orderKeysMax: 8,
  fieldsMax: 100,
  /** A `_find` without `limit` returns at most this many documents (400 beyond: page with limit/offset). */
  resultsMax: 10_000,
  /** The largest `limit` (as `_all_docs` and `_changes`): a page is built whole in memory. */
  limitMax: 100_000,
} as const;

const OPS: Record<string, Condition['kind'] | Comparison> = {
  '=': 'eq', '==': 'eq', eq: 'eq',
  '!=': 'ne', ne: 'ne', '=/=': 'ne',
  '>': '>', gt: '>', '>=': '>=', gte: '>=', '<': '<', lt: '<', '<=': '<=', lte: '<=', '=<': '<=',
  in: 'in', contains: 'contains', prefix: 'prefix', regex: 'regex', exists: 'exists', missing: 'missing',
};

const SELECTOR_OPS: Record<string, string> = {
  $eq: 'eq', $ne: 'ne', $gt: '>', $gte: '>=', $lt: '<', $lte: '<=', $in: 'in', $regex: 'regex', $exists: 'exists',
  $prefix: 'prefix', $contains: 'contains',
};

const bad = (message: string) => new FirkinError('bad_request', message);

/** Checks that a decoded (JSON or CBOR) value is plain JSON. */
export function toJson(v: unknown, where: string, depth = 0): Json {
  if (depth > 64) throw bad(`${where}: value nested too deeply`);
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw bad(`${where}: numbers must be finite`);
    return v;
  }
  if (Array.isArray(v)) return v.map((x) => toJson(x, where, depth + 1));
  if (isPlainObject(v)) {
    const out: Record<string, Json> = {};
    for (const [k, x] of Object.entries(v)) out[k] = toJson(x, where, depth + 1);
    return out;
  }
  throw bad(`${where}: not a JSON value`);
}

export function parsePath(raw: unknown, where = 'path'): Path {
  let segments: unknown[];
  if (typeof raw === 'string') segments = raw.split('.');
  else if (Array.isArray(raw)) segments = raw;
  else throw bad(`${where} must be an array of keys and indexes (or a dotted string), got ${JSON.stringify(raw)}`);
  if (segments.length === 0) throw bad(`${where} must not be empty`);
  if (segments.length > QUERY_LIMITS.pathSegmentsMax) throw bad(`${where} has more than ${QUERY_LIMITS.pathSegmentsMax} segments`);
  return segments.map((s) => {
    if (typeof s === 'string' && s.length > 0 && s.length <= QUERY_LIMITS.segmentCharsMax) return s;
    if (typeof s === 'number' && Number.isSafeInteger(s) && s >= 0) return s;
    throw bad(`${where}: bad segment ${JSON.stringify(s)} (non-empty string key or non-negative integer index)`);
  });
}

function compileRegex(raw: unknown, where: string): Pattern {
  if (typeof raw !== 'string') throw bad(`${where}: regex value must be a string`);
  if (raw.length > QUERY_LIMITS.regexCharsMax) throw bad(`${where}: regex longer than ${QUERY_LIMITS.regexCharsMax} characters`);
  try {
    // RE2 runs in linear time: no pattern can stall the node with backtracking.
    return new RE2(raw, 'u');
  } catch (err) {
    throw bad(`${where}: invalid regex ${JSON.stringify(raw)}: ${(err as Error).message}`);
  }
}

class Budget {
  count = 0;
  take(): void {
    if (++this.count > QUERY_LIMITS.conditionsMax) throw bad(`query has more than ${QUERY_LIMITS.conditionsMax} conditions`);
  }
}

/** `> null`: present and not null; `>= null`: present; `<= null`: null; `< null`: nothing. */
function nullComparison(op: Comparison, path: Path): Condition {
  switch (op) {
    case '>':
      return { kind: 'ne', path, value: null };
    case '>=':
      return { kind: 'exists', path };
    case '<=':
      return { kind: 'eq', path, value: null };
    case '<':
      return { kind: 'in', path, values: [] };
    default:
      return unreachable(op);
  }
}

function leaf(kind: string, path: Path, value: unknown, hasValue: boolean, where: string): Condition {
  const need = () => {
    if (!hasValue) throw bad(`${where}: operator needs a value`);
  };
  switch (kind) {
    case 'eq':
    case 'ne':
    case 'contains':
      need();
      return { kind, path, value: toJson(value, where) };
    case '>':
    case '>=':
    case '<':
    case '<=':
      need();
      // CouchDB's "every document" idiom, `{"_id": {"$gt": null}}`: null sorts below every
      // other value, so a comparison with it is a presence test.
      if (value === null) return nullComparison(kind, path);
      if (typeof value !== 'number' && typeof value !== 'string') throw bad(`${where}: ${kind} compares numbers, strings or null, got ${JSON.stringify(value)}`);
      if (typeof value === 'number' && !Number.isFinite(value)) throw bad(`${where}: numbers must be finite`);
      return { kind: 'cmp', path, op: kind as Comparison, value };
    case 'in':
      need();
      if (!Array.isArray(value)) throw bad(`${where}: in needs a list value`);
      if (value.length > QUERY_LIMITS.inValuesMax) throw bad(`${where}: in list longer than ${QUERY_LIMITS.inValuesMax}`);
      return { kind: 'in', path, values: value.map((v) => toJson(v, where)) };
    case 'prefix':
      need();
      if (typeof value !== 'string') throw bad(`${where}: prefix needs a string value`);
      return { kind: 'prefix', path, value };
    case 'regex':
      need();
      return { kind: 'regex', path, pattern: compileRegex(value, where) };
    case 'exists':
      return { kind: 'exists', path };
    case 'missing':
      return { kind: 'missing', path };
    default:
      throw bad(`${where}: unknown operator ${JSON.stringify(kind)}`);
  }
}

function parseCondition(raw: unknown, where: string, depth: number, budget: Budget): Condition {
  if (depth > QUERY_LIMITS.depthMax) throw bad(`${where}: conditions nested deeper than ${QUERY_LIMITS.depthMax}`);
  budget.take();
  if (!isPlainObject(raw)) throw bad(`${where} must be an object, got ${JSON.stringify(raw)}`);
  const keys = Object.keys(raw);
  for (const group of ['and', 'or'] as const) {
    if (group in raw) {
      if (keys.length !== 1) throw bad(`${where}: {${group}: [...]} takes no other fields`);
      const list = raw[group];
      if (!Array.isArray(list)) throw bad(`${where}.${group} must be a list of conditions`);
      const parts = list.map((c, i) => parseCondition(c, `${where}.${group}[${i}]`, depth + 1, budget));
      return group === 'and' ? { kind: 'and', all: parts } : { kind: 'or', any: parts };
    }
  }
  if ('not' in raw) {
    if (keys.length !== 1) throw bad(`${where}: {not: {...}} takes no other fields`);
    return { kind: 'not', condition: parseCondition(raw.not, `${where}.not`, depth + 1, budget) };
  }
  for (const k of keys) if (!['path', 'op', 'value'].includes(k)) throw bad(`${where}: unknown field ${JSON.stringify(k)}`);
  if (!('path' in raw)) throw bad(`${where}: a condition needs a path`);
  const path = parsePath(raw.path, `${where}.path`);
  const opRaw = raw.op ?? '=';
  if (typeof opRaw !== 'string' || !Object.hasOwn(OPS, opRaw)) throw bad(`${where}: unknown operator ${JSON.stringify(opRaw)}`);
  return leaf(OPS[opRaw]!, path, raw.value, 'value' in raw, where);
}

export function parseWhere(raw: unknown, where = 'where'): Condition {
  const budget = new Budget();
  if (raw === undefined) return { kind: 'and', all: [] };
  if (Array.isArray(raw)) return { kind: 'and', all: raw.map((c, i) => parseCondition(c, `${where}[${i}]`, 1, budget)) };
  return parseCondition(raw, where, 1, budget);
}

/** CouchDB's operators on one field that are not a plain `leaf` (their value is checked here). */
function fieldOperator(key: string, path: Path, value: unknown, where: string, depth: number, budget: Budget): Condition | undefined {
  const at = `${where}.${key}`;
  switch (key) {
    case '$nin': {
      // As CouchDB: the field must be there, with none of the values.
      const within = leaf('in', path, value, true, at);
      return { kind: 'and', all: [{ kind: 'exists', path }, { kind: 'not', condition: within }] };
    }
    case '$all': {
      if (!Array.isArray(value)) throw bad(`${at} needs a list value`);
      if (value.length > QUERY_LIMITS.inValuesMax) throw bad(`${at}: list longer than ${QUERY_LIMITS.inValuesMax}`);
      // An empty list matches nothing (CouchDB and MongoDB agree): an `or` of nothing.
      if (value.length === 0) return { kind: 'or', any: [] };
      return { kind: 'and', all: value.map((v) => ({ kind: 'contains', path, value: toJson(v, at) })) };
    }
    case '$size':
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw bad(`${at} needs a non-negative integer`);
      return { kind: 'size', path, size: value };
    case '$mod': {
      const [divisor, remainder] = Array.isArray(value) && value.length === 2 ? value : [];
      if (!Number.isSafeInteger(divisor) || divisor === 0 || !Number.isSafeInteger(remainder)) throw bad(`${at} needs [divisor, remainder]: integers, the divisor not 0`);
      return { kind: 'mod', path, divisor: divisor as number, remainder: remainder as number };
    }
    case '$type':
      if (typeof value !== 'string' || !(JSON_TYPES as readonly string[]).includes(value)) throw bad(`${at} must be one of ${JSON_TYPES.join(', ')}`);
      return { kind: 'type', path, type: value as JsonType };
    case '$elemMatch':
    case '$allMatch':
      // The inner selector is on each element: its own operators may apply to the element itself.
      return { kind: key === '$elemMatch' ? 'elemMatch' : 'allMatch', path, condition: { kind: 'and', all: parseSelectorAt([], value, at, depth + 1, budget, true) } };
    case '$keyMapMatch':
      // The inner selector is on each key of an object (a string), with its own operators.
      return { kind: 'keyMapMatch', path, condition: { kind: 'and', all: parseSelectorAt([], value, at, depth + 1, budget, true) } };
    case '$beginsWith': // CouchDB 3.4's name for $prefix
      return leaf('prefix', path, value, true, at);
    default:
      return undefined;
  }
}

function parseSelectorAt(prefix: Path, raw: unknown, where: string, depth: number, budget: Budget, element = false): Condition[] {
  if (depth > QUERY_LIMITS.depthMax) throw bad(`${where}: selector nested deeper than ${QUERY_LIMITS.depthMax}`);
  if (!isPlainObject(raw)) throw bad(`${where} must be an object`);
  const out: Condition[] = [];
  for (const [key, value] of Object.entries(raw)) {
    budget.take();
    if (key === '$and' || key === '$or' || key === '$nor') {
      if (!Array.isArray(value)) throw bad(`${where}.${key} must be a list of selectors`);
      const parts = value.map((s, i): Condition => ({ kind: 'and', all: parseSelectorAt(prefix, s, `${where}.${key}[${i}]`, depth + 1, budget, element) }));
      if (key === '$and') out.push({ kind: 'and', all: parts });
      else if (key === '$or') out.push({ kind: 'or', any: parts });
      else out.push({ kind: 'not', condition: { kind: 'or', any: parts } });
      continue;
    }
    if (key === '$not') {
      out.push({ kind: 'not', condition: { kind: 'and', all: parseSelectorAt(prefix, value, `${where}.$not`, depth + 1, budget, element) } });
      continue;
    }
    if (key.startsWith('$')) {
      if (prefix.length === 0 && !element) throw bad(`${where}: operator ${key} needs a field`);
      const special = fieldOperator(key, prefix, value, where, depth, budget);
      if (special !== undefined) {
        out.push(special);
        continue;
      }
      const kind = SELECTOR_OPS[key];
      if (kind === undefined) throw bad(`${where}: unsupported selector operator ${JSON.stringify(key)}`);
      if (kind === 'exists') {
        if (typeof value !== 'boolean') throw bad(`${where}.$exists must be true or false`);
        out.push({ kind: value ? 'exists' : 'missing', path: prefix });
      } else {
        out.push(leaf(kind, prefix, value, true, `${where}.${key}`));
      }
      continue;
    }
    const path = [...prefix, ...parsePath(key, `${where} key ${JSON.stringify(key)}`)];
    if (isPlainObject(value)) {
      const opKeys = Object.keys(value).filter((k) => k.startsWith('$'));
      if (opKeys.length > 0 && opKeys.length !== Object.keys(value).length) {
        throw bad(`${where}.${key}: mixes operators and fields`);
      }
      if (Object.keys(value).length === 0) out.push({ kind: 'eq', path, value: {} });
      else out.push(...parseSelectorAt(path, value, `${where}.${key}`, depth + 1, budget));
    } else {
      out.push({ kind: 'eq', path, value: toJson(value, `${where}.${key}`) });
    }
  }
  return out;
}

export function parseSelector(raw: unknown): Condition {
  return { kind: 'and', all: parseSelectorAt([], raw, 'selector', 1, new Budget()) };
}

/**
 * Ids are unique, so keys after `_id` never decide, and a last `_id` ascending is the default
 * tie-break: both are dropped (`sort: [{"_id": "asc"}]` plans as no order at all).
 */
function parseOrder(raw: unknown): OrderKey[] {
  const keys = parseOrderKeys(raw);
  const isId = (k: OrderKey) => k.path.length === 1 && k.path[0] === '_id';
  const first = keys.findIndex(isId);
  const kept = first === -1 ? keys : keys.slice(0, first + 1);
  return kept.length > 0 && isId(kept.at(-1)!) && kept.at(-1)!.dir === 'asc' ? kept.slice(0, -1) : kept;
}

function parseOrderKeys(raw: unknown): OrderKey[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) throw bad('order_by must be a list of {path, dir}');
  if (raw.length > QUERY_LIMITS.orderKeysMax) throw bad(`order_by has more than ${QUERY_LIMITS.orderKeysMax} keys`);
  return raw.map((k, i) => {
    const where = `order_by[${i}]`;
    if (typeof k === 'string') return { path: parsePath(k, where), dir: 'asc' as const };
    if (!isPlainObject(k)) throw bad(`${where} must be {path, dir}`);
    if ('path' in k) {
      const dir = k.dir ?? 'asc';
      if (dir !== 'asc' && dir !== 'desc') throw bad(`${where}.dir must be asc or desc`);
      return { path: parsePath(k.path, `${where}.path`), dir };
    }
    // CouchDB `sort` style: {"field": "asc"}
    const entries = Object.entries(k);
    if (entries.length !== 1 || (entries[0]![1] !== 'asc' && entries[0]![1] !== 'desc')) throw bad(`${where} must be {path, dir}`);
    return { path: parsePath(entries[0]![0], where), dir: entries[0]![1] as 'asc' | 'desc' };
  });
}

function parseCount(raw: unknown, name: string, max = Number.MAX_SAFE_INTEGER): number | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'number' || !Number.isSafeInteger(raw) || raw < 0) throw bad(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  if (raw > max) throw bad(`${name} must be at most ${max}, got ${raw}: page with bookmark (or limit and skip)`);
  return raw;
}

/** CouchDB's `fields`: object keys only (a dotted string or a list of keys), at most 100. */
function parseFields(raw: unknown): Path[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!Array.isArray(raw)) throw bad('fields must be a list of field names');
  if (raw.length > QUERY_LIMITS.fieldsMax) throw bad(`fields has more than ${QUERY_LIMITS.fieldsMax} names`);
  return raw.map((f, i) => {
    const path = parsePath(f, `fields[${i}]`);
    if (path.some((seg) => typeof seg !== 'string')) throw bad(`fields[${i}]: names object keys only, got ${JSON.stringify(f)}`);
    return path;
  });
}

const FIND_FIELDS = ['where', 'selector', 'limit', 'offset', 'skip', 'order_by', 'sort', 'include_docs', 'fields', 'use_index', 'execution_stats', 'allow_fallback', 'conflicts', 'bookmark', 'r', 'update', 'stable', 'stale'];

/**
 * CouchDB's read options, checked (`execution_stats` and `conflicts` take effect) and otherwise without effect here: `r` (replicas to read; a database
 * is one node's, a VDB shard reads its Raft leader), `update`, `stable` and `stale` (the
 * index is written with each document, so it is never behind).
 */
function checkReadOptions(raw: Record<string, unknown>): void {
  if (raw.r !== undefined && (typeof raw.r !== 'number' || !Number.isSafeInteger(raw.r) || raw.r < 1)) throw bad('r must be a positive integer');
  for (const k of ['update', 'stable', 'allow_fallback', 'execution_stats', 'conflicts'] as const) {
    if (raw[k] !== undefined && typeof raw[k] !== 'boolean') throw bad(`${k} must be true or false`);
  }
  if (raw.stale !== undefined && raw.stale !== 'ok' && raw.stale !== false) throw bad('stale must be "ok" or false');
}

export function parseFind(raw: unknown): FindQuery {
  if (raw === undefined || raw === null) raw = {};
  if (!isPlainObject(raw)) throw bad('the _find body must be an object');
  for (const k of Object.keys(raw)) if (!FIND_FIELDS.includes(k)) throw bad(`unknown _find field ${JSON.stringify(k)}`);
  checkReadOptions(raw);
  const parts: Condition[] = [];
  if (raw.where !== undefined) parts.push(parseWhere(raw.where));
  if (raw.selector !== undefined) parts.push(parseSelector(raw.selector));
  const includeDocs = raw.include_docs ?? true;
  if (typeof includeDocs !== 'boolean') throw bad('include_docs must be true or false');
  if (raw.order_by !== undefined && raw.sort !== undefined) throw bad('give order_by or sort, not both');
  const orderBy = parseOrder(raw.order_by ?? raw.sort);
  const after = decodeBookmark(raw.bookmark, orderBy.length);
  return {
    where: parts.length === 1 ? parts[0]! : { kind: 'and', all: parts },
    limit: parseCount(raw.limit, 'limit', QUERY_LIMITS.limitMax),
    offset: parseCount(raw.offset ?? raw.skip, 'offset') ?? 0,
    orderBy,
    includeDocs,
    fields: parseFields(raw.fields),
    ...(raw.allow_fallback === false ? { allowFallback: false } : {}),
    ...(raw.conflicts === true ? { conflicts: true } : {}),
    ...(after === undefined ? {} : { after }),
    ...(raw.execution_stats === true ? { executionStats: true } : {}),
  };
}

export { COMPARISONS };
