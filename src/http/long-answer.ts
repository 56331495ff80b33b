// The answer of a request whose work runs inside it and may outlive the server's idle
// timeout (120 s without a byte on the socket): a one-shot `_replicate`, a VDB's `_import`,
// `_split` and `_merge`, a tiered database's `run_migration`. Most finish quickly and answer
// normally, errors with their status. A long one would have its connection cut while the
// work goes on, its answer lost: after `keepAliveMs` the answer starts as a 200 JSON stream
// of whitespace keep-alives (one every `keepAliveMs`), ended by the result, or by `{ok:
// false, error, message}` when the work fails after that point. JSON parsers skip the
// leading whitespace.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import { errorInStream } from './errors.js';

async function* keepAlive(run: Promise<unknown>, everyMs: number, request: FastifyRequest): AsyncGenerator<string> {
  let result: { done: boolean; body: unknown } = { done: false, body: undefined };
  const finished = run.then(
    (body) => (result = { done: true, body }),
    (err: unknown) => (result = { done: true, body: { ok: false, ...errorInStream(err, request) } }),
  );
  while (!result.done) {
    yield '\n';
    await Promise.race([finished, new Promise((r) => setTimeout(r, everyMs).unref())]);
  }
  yield `${JSON.stringify(result.body)}\n`;
}

/** `run`'s result as the answer: at once when it settles within `keepAliveMs`, else streamed (above). */
export async function answerWhenDone(run: Promise<unknown>, keepAliveMs: number, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const settled = await Promise.race([run.then(() => true, () => true), new Promise<false>((r) => setTimeout(() => r(false), keepAliveMs).unref())]);
  if (settled) return run;
  reply.type('application/json; charset=utf-8');
  return reply.send(Readable.from(keepAlive(run, keepAliveMs, request)));
}
