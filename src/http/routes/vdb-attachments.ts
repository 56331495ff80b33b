// Attachments of VDB documents: PUT/GET/DELETE /vdb/:vdb/:docid/:name (CouchDB's form) and
// /vdb/:vdb/:docid/_attachments/:name (the form of /db). Same rules, statuses and headers as
// the database routes (`docdb-attachments.ts`); an upload is a document update routed by the
// id's hash (on a cluster, one log entry carrying the bytes), a read goes to the owning shard
// (on a cluster, its leader after a ReadIndex barrier). Raw bodies: this plugin replaces the
// JSON/CBOR parsers in its own context only.
import type { FastifyPluginAsync } from 'fastify';
import { Readable } from 'node:stream';
import { makeBlob } from '../../docdb/doc-input.js';
import { checkAttachmentName, checkDocId } from '../../docdb/names.js';
import type { VdbService } from '../../docdb/vdb/service.js';
import { readLimited, tooLarge } from './docdb-attachments.js';
import { answerDelete, expectedRev, hasLiveWinner } from './docdb-shared.js';

export interface VdbAttachmentRouteDeps {
  vdbs: () => VdbService;
  /** SERVICE_ATTACHMENT_MAX_BYTES: a bigger upload is a 413. */
  attachmentMaxBytes: number;
}

const params = {
  type: 'object',
  required: ['vdb', 'docid', 'name'],
  properties: { vdb: { type: 'string', maxLength: 200 }, docid: { type: 'string' }, name: { type: 'string' } },
} as const;

const query = { type: 'object', properties: { rev: { type: 'string' } } } as const;

type Params = { vdb: string; docid: string; name: string };

const PATHS = ['/vdb/:vdb/:docid/:name', '/vdb/:vdb/:docid/_attachments/:name'] as const;
const scoped = { databaseParam: 'vdb' };

export const vdbAttachmentRoutes: FastifyPluginAsync<VdbAttachmentRouteDeps> = async (app, { vdbs, attachmentMaxBytes }) => {
  const target = (p: Params) => ({ vdb: p.vdb, docId: checkDocId(p.docid), name: checkAttachmentName(p.name) });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

  for (const path of PATHS) {
    app.put<{ Params: Params; Querystring: { rev?: string }; Body: NodeJS.ReadableStream | undefined }>(
      path,
      { schema: { params, querystring: query }, bodyLimit: attachmentMaxBytes, config: scoped },
      async (request, reply) => {
        const { vdb, docId, name } = target(request.params);
        const rev = expectedRev({ ifMatch: request.headers['if-match'], query: request.query.rev });
        const declared = Number(request.headers['content-length']);
        if (Number.isFinite(declared) && declared > attachmentMaxBytes) throw tooLarge(attachmentMaxBytes);
        const data = await readLimited(request.body, attachmentMaxBytes);
        const blob = makeBlob(data, request.headers['content-type'] ?? 'application/octet-stream');
        const result = await vdbs().putAttachment(vdb, docId, name, rev, blob);
        reply.code(201).header('etag', `"${result.rev}"`);
        return { ...result, name, content_type: blob.content_type, length: blob.length, digest: blob.digest };
      },
    );

    app.get<{ Params: Params; Querystring: { rev?: string } }>(path, { schema: { params, querystring: query }, config: scoped }, async (request, reply) => {
      const { vdb, docId, name } = target(request.params);
      const rev = request.query.rev === undefined ? undefined : expectedRev({ query: request.query.rev });
      const att = await vdbs().getAttachment(vdb, docId, name, rev);
      reply.type(att.meta.content_type).header('content-length', String(att.meta.length)).header('etag', `"${att.meta.digest}"`);
      return reply.send(Readable.from(att.chunks()));
    });

    app.delete<{ Params: Params; Querystring: { rev?: string } }>(path, { schema: { params, querystring: query }, config: scoped }, async (request, reply) => {
      const { vdb, docId, name } = target(request.params);
      const rev = expectedRev({ ifMatch: request.headers['if-match'], query: request.query.rev });
      const result = await answerDelete(docId, rev, () => hasLiveWinner(() => vdbs().getDoc(vdb, docId, {})), (r) => vdbs().putAttachment(vdb, docId, name, r, undefined), 'an attachment');
      reply.header('etag', `"${result.rev}"`);
      return result;
    });
  }
};
