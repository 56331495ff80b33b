// Reading a streamed response (server-sent events, a continuous feed) in a test: the text so
// far, and a wait until it satisfies a predicate, with a deadline.
import { waitFor } from './wait.js';

export interface StreamText {
  /** Everything read so far. */
  readonly text: string;
  /** Reads until `pred(text)` holds; fails when the stream ends first or the deadline passes. */
  until(pred: (text: string) => boolean, what?: string): Promise<void>;
}

export function streamText(res: Response, timeoutMs = 10_000): StreamText {
  const reader = res.body!.getReader();
  let text = '';
  return {
    get text() {
      return text;
    },
    async until(pred, what = 'the stream') {
      await waitFor(
        async () => {
          if (pred(text)) return true;
          const { value, done } = await reader.read();
          if (done) throw new Error(`${what}: the stream ended`);
          text += Buffer.from(value).toString();
          return pred(text);
        },
        { timeoutMs, intervalMs: 0, what },
      );
    },
  };
}
