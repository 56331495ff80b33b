// Attachments: PUT/GET/DELETE /db/:db/:docid/_attachments/:name. Any content type is taken
// as raw bytes here (this plugin replaces the JSON/CBOR parsers in its own context only),
// read as a stream and cut off with a 413 as soon as it passes the size limit.
import type { FastifyPluginAsync } from 'fastify';
import { Readable } from 'node:stream';
import { FirkinError } from '../../core/errors.js';
import { makeBlob } from '../../docdb/doc-input.js';
import type { DocEngine } from '../../docdb/engine.js';
import { checkAttachmentName, checkDocId } from '../../docdb/names.js';
import { answerDelete, existingDb, expectedRev, hasLiveRecord } from './docdb-shared.js';

export interface AttachmentRouteDeps {
  docs: DocEngine;
  /** SERVICE_ATTACHMENT_MAX_BYTES: a bigger upload is a 413. */
  attachmentMaxBytes: number;
  /** Where a document lives when tiered storage moved it (default: its own database). */
  locate?: (db: string, docId: string) => string | Promise<string>;
}

const params = {
  type: 'object',
  required: ['db', 'docid', 'name'],
  properties: { db: { type: 'string' }, docid: { type: 'string' }, name: { type: 'string' } },
} as const;

const query = {
  type: 'object',
  properties: { rev: { type: 'string' } },
} as const;

type Params = { db: string; docid: string; name: string };

export const tooLarge = (max: number) => new FirkinError('too_large', `attachment is larger than the limit of ${max} bytes (SERVICE_ATTACHMENT_MAX_BYTES)`);

/** Past the limit the rest is read and dropped (so the client gets its 413), up to this much; then the socket is cut. */
const DISCARD_BYTES_MAX = 16 * 1024 * 1024;

export async function readLimited(stream: NodeJS.ReadableStream | undefined, max: number): Promise<Buffer> {
  if (stream === undefined) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= max) {
      chunks.push(chunk);
      continue;
    }
    chunks.length = 0;
    if (size - max > DISCARD_BYTES_MAX) {
      (stream as Readable).destroy?.();
      break;
    }
  }
  if (size > max) throw tooLarge(max);
  return Buffer.concat(chunks, size);
}

export const docdbAttachmentRoutes: FastifyPluginAsync<AttachmentRouteDeps> = async (app, { docs, attachmentMaxBytes, locate = (db) => db }) => {
  /** The database (following a tiered document), document id and attachment name of a request. */
  const target = async (p: Params) => {
    const docId = checkDocId(p.docid);
    return { docId, db: await locate(existingDb(docs, p.db), docId), name: checkAttachmentName(p.name) };
  };
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

  // CouchDB's path is /db/doc/name (PouchDB's putAttachment, getAttachment and get with
  // attachments use it); /_attachments/ is the spec's.
  for (const path of ['/db/:db/:docid/_attachments/:name', '/db/:db/:docid/:name']) {
    app.put<{ Params: Params; Querystring: { rev?: string }; Body: NodeJS.ReadableStream | undefined }>(
      path,
      { schema: { params, querystring: query }, bodyLimit: attachmentMaxBytes },
      async (request, reply) => {
        const { db, docId, name } = await target(request.params);
        const rev = expectedRev({ ifMatch: request.headers['if-match'], query: request.query.rev });
        const declared = Number(request.headers['content-length']);
        if (Number.isFinite(declared) && declared > attachmentMaxBytes) throw tooLarge(attachmentMaxBytes);
        const data = await readLimited(request.body, attachmentMaxBytes);
        const contentType = request.headers['content-type'] ?? 'application/octet-stream';
        const blob = makeBlob(data, contentType);
        const result = await docs.putAttachment(db, docId, name, rev, blob);
        reply.code(201).header('etag', `"${result.rev}"`);
        return { ...result, name, content_type: blob.content_type, length: blob.length, digest: blob.digest };
      },
    );

    app.get<{ Params: Params; Querystring: { rev?: string } }>(
      path,
      { schema: { params, querystring: query } },
      async (request, reply) => {
        const { db, docId, name } = await target(request.params);
        const rev = request.query.rev === undefined ? undefined : expectedRev({ query: request.query.rev });
        const att = await docs.getAttachment(db, docId, name, rev);
        reply.type(att.meta.content_type).header('content-length', String(att.meta.length)).header('etag', `"${att.meta.digest}"`);
        return reply.send(Readable.from(att.chunks()));
      },
    );

    app.delete<{ Params: Params; Querystring: { rev?: string } }>(
      path,
      { schema: { params, querystring: query } },
      async (request, reply) => {
        const { db, docId, name } = await target(request.params);
        const rev = expectedRev({ ifMatch: request.headers['if-match'], query: request.query.rev });
        const result = await answerDelete(docId, rev, () => hasLiveRecord(docs, db, docId), (r) => docs.putAttachment(db, docId, name, r, undefined), 'an attachment');
        reply.header('etag', `"${result.rev}"`);
        return result;
      },
    );
  }
};
