// Server-sent events as the node writes them (`\n` line ends), read from text chunks: the
// console reads its feeds with fetch (an EventSource cannot send the Authorization header), so
// it splits them itself. Then which changes a feed may show, so that resuming from its cursor
// neither skips nor repeats one. Pure.
export interface SseEvent {
  /** `event:`; `message` when the block names none (the SSE spec's default). */
  readonly type: string;
  /** The `data:` lines, joined by `\n`. */
  readonly data: string;
  /** `id:`, when the block carries one: the feed's cursor. */
  readonly id: string | undefined;
}

/**
 * The complete events in `buffer` (each ends with a blank line) and the unfinished rest, to
 * be prefixed to the next chunk. Comment-only blocks (`: heartbeat`) yield nothing.
 */
export function takeEvents(buffer: string): { events: SseEvent[]; rest: string } {
  const events: SseEvent[] = [];
  let start = 0;
  for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n', start)) {
    const event = parseBlock(buffer.slice(start, end));
    if (event !== undefined) events.push(event);
    start = end + 2;
  }
  return { events, rest: buffer.slice(start) };
}

function parseBlock(block: string): SseEvent | undefined {
  let type = 'message';
  let id: string | undefined;
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const raw = colon === -1 ? '' : line.slice(colon + 1);
    const value = raw.startsWith(' ') ? raw.slice(1) : raw;
    if (field === 'event') type = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id') id = value;
  }
  return data.length === 0 && id === undefined ? undefined : { type, data: data.join('\n'), id };
}

export interface FeedStep<T> {
  /** Changes the feed may show now, oldest first. */
  readonly shown: T[];
  /** Changes read but not yet covered by a cursor. */
  readonly held: T[];
  /** The newest cursor among the events: where to resume after `shown`. */
  readonly cursor: string | undefined;
  /** The node's `event: error` (its `{error, message}`), as a sentence. */
  readonly error: string | undefined;
}

/**
 * A change is shown once an event carries a cursor (`id:`) at or past it, so resuming from the
 * last cursor neither skips nor repeats a shown change. A database's stream puts the cursor on
 * every event; a VDB's on the last event of each page (in a cluster the cursor holds one
 * position per shard, which no single change's `seq` does).
 */
export function feedStep<T>(held: readonly T[], events: readonly SseEvent[], parse: (data: string) => T): FeedStep<T> {
  const shown: T[] = [];
  let waiting = [...held];
  let cursor: string | undefined;
  let error: string | undefined;
  for (const e of events) {
    if (e.type === 'change') waiting.push(parse(e.data));
    else if (e.type === 'error') error = describeStreamError(e.data);
    if (e.id !== undefined) {
      shown.push(...waiting);
      waiting = [];
      cursor = e.id;
    }
  }
  return { shown, held: waiting, cursor, error };
}

function describeStreamError(data: string): string {
  try {
    const { error, message } = JSON.parse(data) as { error?: unknown; message?: unknown };
    if (typeof error === 'string' && typeof message === 'string') return `the feed stopped: ${error}: ${message}`;
  } catch {
    // Not the node's JSON: show it as it came.
  }
  return `the feed stopped: ${data}`;
}
