// The content filter of changes feeds: a `where` query and/or MQTT-style path patterns,
// AND-ed. A deletion never matches a query (it has no body) but matches patterns by its id.
import type { ChangeFilter } from '../engine.js';
import type { Condition, Json } from './ast.js';
import { matches } from './match.js';
import { parseWhere } from './parse.js';
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

/** From request fields: `query: {where}` (or a bare where list) and `paths`. 400 on bad input. */
export function changeFilterFrom(query: unknown, paths: string | readonly string[] | undefined): ChangeFilter | undefined {
  let where: Condition | undefined;
  if (query !== undefined && query !== null) {
    const raw = typeof query === 'object' && !Array.isArray(query) && 'where' in query ? (query as { where: unknown }).where : query;
    where = parseWhere(raw, 'query.where');
  }
  return makeChangeFilter(where, parsePatterns(paths));
}
