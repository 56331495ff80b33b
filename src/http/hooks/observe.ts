// Per-request observation: HLC header on every reply, metrics, and a debug log line.
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { type HybridClock, hlcToBase64, parseHlc } from '../../core/hlc.js';
import type { Metrics } from '../../metrics.js';

export const HLC_HEADER = 'x-service-hlc';

export function installObserve(app: FastifyInstance, deps: { hlc: HybridClock; metrics: Metrics; log: Logger }): void {
  // Callback hooks, not async ones: each runs for every request, and an async hook costs it a
  // promise and a microtask turn.
  // A client that sends its clock is a receive event: merge it (a bad value is ignored).
  app.addHook('onRequest', (request, _reply, done) => {
    const remote = request.headers[HLC_HEADER];
    if (typeof remote === 'string') {
      const parsed = parseHlc(remote);
      if (parsed !== undefined) deps.hlc.update(parsed);
    }
    done();
  });
  // onSend runs for every reply: success, errors, 404 and 405 alike.
  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.header(HLC_HEADER, hlcToBase64(deps.hlc.now()));
    done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    const labels = {
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status: String(reply.statusCode),
    };
    deps.metrics.httpRequests.inc(labels);
    deps.metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
    if (deps.log.isLevelEnabled('debug')) {
      deps.log.debug({ ...labels, url: request.url, ms: Math.round(reply.elapsedTime * 100) / 100 }, 'request');
    }
    done();
  });
}
