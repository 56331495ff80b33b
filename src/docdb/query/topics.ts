// MQTT-style path subscriptions over document content (pure).
//
// Every scalar leaf of a document is a topic `field/sub/.../value`: array elements put their
// index in as a segment (`tags/0/red`), numbers are written in decimal, booleans and null as
// words, strings cut to 100 characters. A deleted document has one topic: its id.
// A pattern is `/`-separated levels; `+` matches exactly one level, `#` (last level only)
// any number of levels, including none. Like the original, a pattern also matches when it
// equals a whole-level prefix of a topic: `type` matches `type/user`.
import { FirkinError } from '../../core/errors.js';
import type { Json } from './ast.js';

export const TOPIC_LIMITS = { patternsMax: 16, patternCharsMax: 1_024, valueCharsMax: 100, topicsPerDocMax: 10_000 } as const;

export type TopicPattern = readonly string[];

export function parsePattern(raw: string): TopicPattern {
  if (raw.length === 0 || raw.length > TOPIC_LIMITS.patternCharsMax) {
    throw new FirkinError('bad_request', `path pattern must have 1 to ${TOPIC_LIMITS.patternCharsMax} characters`);
  }
  const levels = raw.split('/');
  levels.forEach((level, i) => {
    if (level.includes('#') && (level !== '#' || i !== levels.length - 1)) {
      throw new FirkinError('bad_request', `invalid path pattern ${JSON.stringify(raw)}: # must be a whole level and the last one`);
    }
    if (level.includes('+') && level !== '+') {
      throw new FirkinError('bad_request', `invalid path pattern ${JSON.stringify(raw)}: + must be a whole level`);
    }
  });
  return levels;
}

export function parsePatterns(raw: string | readonly string[] | undefined): TopicPattern[] | undefined {
  if (raw === undefined) return undefined;
  const list = typeof raw === 'string' ? [raw] : raw;
  if (list.length > TOPIC_LIMITS.patternsMax) throw new FirkinError('bad_request', `at most ${TOPIC_LIMITS.patternsMax} path patterns`);
  return list.map(parsePattern);
}

function leafText(v: Json): string | undefined {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return v.slice(0, TOPIC_LIMITS.valueCharsMax);
  return undefined;
}

/** Topic levels of a live document (fields starting with `_` are metadata and skipped). */
export function topicsOf(body: Record<string, Json>): string[][] {
  const out: string[][] = [];
  const stack: { value: Json; path: string[] }[] = Object.entries(body)
    .filter(([k]) => !k.startsWith('_'))
    .map(([k, v]) => ({ value: v, path: [k] }));
  while (stack.length > 0 && out.length < TOPIC_LIMITS.topicsPerDocMax) {
    const { value, path } = stack.pop()!;
    const text = leafText(value);
    if (text !== undefined) out.push([...path, text]);
    else if (Array.isArray(value)) value.forEach((v, i) => stack.push({ value: v, path: [...path, String(i)] }));
    else for (const [k, v] of Object.entries(value as Record<string, Json>)) stack.push({ value: v, path: [...path, k] });
  }
  return out;
}

export function patternMatchesTopic(pattern: TopicPattern, topic: readonly string[]): boolean {
  for (let i = 0; i < pattern.length; i++) {
    const level = pattern[i]!;
    if (level === '#') return true;
    if (i >= topic.length) return false;
    if (level !== '+' && level !== topic[i]) return false;
  }
  return true; // the pattern matched a whole-level prefix of the topic
}

/** Does a change match any of the patterns? `body` undefined = deleted document. */
export function changeMatchesPatterns(patterns: readonly TopicPattern[], docId: string, body: Record<string, Json> | undefined): boolean {
  const topics = body === undefined ? [docId.split('/')] : topicsOf(body);
  return patterns.some((p) => topics.some((t) => patternMatchesTopic(p, t)));
}
