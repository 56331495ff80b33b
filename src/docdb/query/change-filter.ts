// The content filter of changes feeds: a `where` query and/or MQTT-style path patterns,
// AND-ed. A deletion never matches a query (it has no body) but matches patterns by its id.
import type { ChangeFilter } from '../engine.js';
import type { Condition, Json } from './ast.js';
import { matches } from './match.js';
import { FirkinError } from '../../core/errors.js';
import { parseSelector, parseWhere } from './parse.js';
import { type TopicPattern, changeMatchesPatterns, parsePatterns } from './topics.js';

export function makeChangeFilter(where: Condition | undefined, patterns: readonly TopicPattern[] | undefined): ChangeFilter | undefined {
  if (where === undefined && (patterns === undefined || patterns.length === 0)) return undefined;
  return {
    test(docId, body) {
      if (where !== undefined && (body === undefined || !matches({ ...(body as Record<string, Json>), _id: docId }, where))) return false;
      if (patterns !== undefined && patterns.length > 0 && !changeMatchesPatterns(patterns, docId, body as Record<string, Json> | undefined)) return false;
      return true;
    },
  };
}

/**
 * From request fields: `query: {where}` (or a bare where list), CouchDB's `selector` and
 * `paths`, AND-ed. 400 on bad input.
 */
export function changeFilterFrom(query: unknown, paths: string | readonly string[] | undefined, selector?: unknown): ChangeFilter | undefined {
  const parts: Condition[] = [];
  if (query !== undefined && query !== null) {
    const raw = typeof query === 'object' && !Array.isArray(query) && 'where' in query ? (query as { where: unknown }).where : query;
    parts.push(parseWhere(raw, 'query.where'));
  }
  if (selector !== undefined && selector !== null) parts.push(parseSelector(selector));
  const where: Condition | undefined = parts.length === 0 ? undefined : parts.length === 1 ? parts[0] : { kind: 'and', all: parts };
  return makeChangeFilter(where, parsePatterns(paths));
}

/**
 * CouchDB's `filter` parameter names how a feed is filtered. Its built-in forms are taken
 * (`_doc_ids` with `doc_ids`, `_selector` with a body `selector`); design-document filters
 * and `_view` are a 400, never an unfiltered feed.
 */
export function checkCouchFilter(filter: string | undefined, given: { docIds: boolean; selector: boolean }): void {
  if (filter === undefined) return;
  const bad = (message: string) => new FirkinError('bad_request', message);
  if (filter === '_doc_ids') {
    if (!given.docIds) throw bad('filter=_doc_ids needs "doc_ids" (a JSON array in the query string or the body)');
    return;
  }
  if (filter === '_selector') {
    if (!given.selector) throw bad('filter=_selector needs a "selector" object in the body of POST _changes');
    return;
  }
  throw bad(`filter=${JSON.stringify(filter)} is not offered: there are no design-document filters or views here; filter with doc_ids (filter=_doc_ids), a selector (filter=_selector), "query" or "paths"`);
}
