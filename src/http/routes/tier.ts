// Tiered storage routes: /db/:db/_tier/... and /db/:db/:doc_id/_tier...
import type { FastifyPluginAsync } from 'fastify';
import { requireKey } from '../hooks/auth.js';
import { checkDbName, checkDocId } from '../../docdb/names.js';
import { TIERS, type Tier } from '../../docdb/tier/policy.js';
import type { Tiers } from '../../docdb/tier/tiers.js';
import { answerWhenDone } from '../long-answer.js';

const dbParams = { type: 'object', required: ['db'], properties: { db: { type: 'string', maxLength: 200 } } } as const;
const docParams = { type: 'object', required: ['db', 'docid'], properties: { db: { type: 'string', maxLength: 200 }, docid: { type: 'string' } } } as const;

export interface TierRouteDeps {
  tiers: Tiers;
  /** After this long a running migration answers as a keep-alive stream (long-answer.ts). */
  keepAliveMs: number;
}

export const tierRoutes: FastifyPluginAsync<TierRouteDeps> = async (app, { tiers, keepAliveMs }) => {
  const db = (name: string) => {
    checkDbName(name);
    return name;
  };

  app.get<{ Params: { db: string } }>('/db/:db/_tier/config', { schema: { params: dbParams } }, async (r) => tiers.config(db(r.params.db)));

  app.post<{ Params: { db: string }; Body: Record<string, unknown> }>(
    '/db/:db/_tier/config',
    { schema: { params: dbParams, body: { type: 'object' } }, config: { permission: 'admin' } },
    async (r) => {
      // The tiers named are databases the node will write documents into, and purge and
      // tombstone them there: the key must administer those too, not only this one.
      for (const field of ['warm_db', 'cold_db']) {
        const target = r.body[field];
        if (typeof target === 'string') requireKey(r, 'admin', target, field);
      }
      return { ok: true, ...(await tiers.setConfig(db(r.params.db), r.body)) };
    },
  );

  app.get<{ Params: { db: string } }>('/db/:db/_tier/capacity', { schema: { params: dbParams } }, async (r) => tiers.capacity(db(r.params.db)));

  app.post<{ Params: { db: string }; Body: { doc_id: string; to_tier: Tier } }>(
    '/db/:db/_tier/migrate',
    {
      schema: {
        params: dbParams,
        body: { type: 'object', required: ['doc_id', 'to_tier'], additionalProperties: false, properties: { doc_id: { type: 'string', minLength: 1 }, to_tier: { enum: TIERS } } },
      },
    },
    async (r) => tiers.migrate(db(r.params.db), checkDocId(r.body.doc_id), r.body.to_tier),
  );

  // A pass over the whole database, inside its request.
  app.post<{ Params: { db: string } }>('/db/:db/_tier/run_migration', { schema: { params: dbParams } }, async (r, reply) =>
    answerWhenDone(tiers.runMigration(db(r.params.db)), keepAliveMs, r, reply),
  );

  app.get<{ Params: { db: string; docid: string } }>('/db/:db/:docid/_tier', { schema: { params: docParams } }, async (r) =>
    tiers.docTier(db(r.params.db), checkDocId(r.params.docid)),
  );

  app.post<{ Params: { db: string; docid: string }; Body: { ttl: number } }>(
    '/db/:db/:docid/_tier/ttl',
    { schema: { params: docParams, body: { type: 'object', required: ['ttl'], additionalProperties: false, properties: { ttl: { type: 'integer', minimum: 0 } } } } },
    async (r) => tiers.setTtl(db(r.params.db), checkDocId(r.params.docid), r.body.ttl),
  );

  app.get<{ Params: { db: string; docid: string } }>('/db/:db/:docid/_tier/ttl', { schema: { params: docParams } }, async (r) =>
    tiers.getTtl(db(r.params.db), checkDocId(r.params.docid)),
  );
};
