// GatewayVectors over the node's VectorEngine (src/vector/engine.ts). Translates the engine's
// generic codes (not_found, already_exists) into the gateway's and makes a batch write
// all-or-nothing, which the engine's own batch form is not (it writes the valid documents and
// reports the others).
import { ERROR_CODES, type ErrorCode, FirkinError, isFirkinError } from '../core/errors.js';
import { EMBEDDER_TYPES, LIMITS, type Metric } from '../vector/collection-config.js';
import type { VectorEngine } from '../vector/engine.js';
import { parseVector } from '../vector/metric.js';
import { type CollectionDefaults, type EmbedderBody, createCollectionRequest, docRequest, scrollRequest, searchRequest } from '../vector/requests.js';
import type { Embedder } from './types.js';
import type { GatewayDocument, GatewayHit, GatewayScroll, GatewayScrollPage, GatewaySearch, GatewayVectors, V1Bounds } from './vectors.js';

export const engineBounds: V1Bounds = { dimensionMax: LIMITS.dimensionsMax, kMax: LIMITS.kMax, embedderTypes: EMBEDDER_TYPES };

function isCode(err: unknown, code: string): boolean {
  return isFirkinError(err) && err.code === code;
}

/** The engine says not_found for a collection that vanished under a request: say it the gateway's way. */
function collectionGone(err: unknown): never {
  if (isCode(err, 'not_found')) throw new FirkinError('collection_not_found', 'collection not found');
  throw err;
}

export class EngineGatewayVectors implements GatewayVectors {
  readonly #engine: VectorEngine;
  readonly #defaults: CollectionDefaults | undefined;

  constructor(engine: VectorEngine, defaults?: CollectionDefaults) {
    this.#engine = engine;
    this.#defaults = defaults;
  }

  async createCollection(internal: string, options: { dimension: number; embedder?: Embedder }): Promise<void> {
    try {
      // The /v1 schema admits only the engine's embedder types.
      await this.#engine.createCollection(createCollectionRequest(internal, { dimensions: options.dimension, embedder: (options.embedder as EmbedderBody | undefined) ?? null }, this.#defaults));
    } catch (err) {
      if (isCode(err, 'already_exists')) throw new FirkinError('collection_already_exists', 'collection already exists');
      throw err;
    }
  }

  /** A name this node's metadata lacks is looked up again once it is up to date (a node catching up must not answer 404). */
  async #config(internal: string): Promise<{ dimension: number; metric: Metric; hasEmbedder: boolean } | undefined> {
    try {
      const c = await this.#engine.getCollectionNow(internal);
      return { dimension: c.dimension as number, metric: c.metric as Metric, hasEmbedder: c.embedder !== null };
    } catch (err) {
      if (isCode(err, 'not_found')) return undefined;
      throw err;
    }
  }

  /** The count is exact on a cluster too (counted through every shard's leader). */
  async collectionInfo(internal: string): Promise<{ dimension: number; count: number } | undefined> {
    try {
      const c = await this.#engine.describeCollection(internal);
      return { dimension: c.dimension as number, count: c.count as number };
    } catch (err) {
      if (isCode(err, 'not_found')) return undefined;
      throw err;
    }
  }

  async listCollections(): Promise<string[]> {
    return Object.keys(this.#engine.listCollections());
  }

  async deleteCollection(internal: string): Promise<boolean> {
    try {
      await this.#engine.deleteCollection(internal);
      return true;
    } catch (err) {
      if (isCode(err, 'not_found')) return false;
      throw err;
    }
  }

  /**
   * All or nothing: every document is checked first (vector shape, embedder present), then the
   * documents that need embedding are written in one engine call (the engine embeds them in one
   * request, so they all fail or all succeed), then the ones with vectors (already valid).
   * Ids must be distinct (the gateway keeps the last of each).
   */
  async upsert(internal: string, docs: readonly GatewayDocument[]): Promise<void> {
    const c = await this.#config(internal);
    if (c === undefined) throw new FirkinError('collection_not_found', 'collection not found');
    const bodies = docs.map((d, i) => {
      const where = docs.length === 1 ? 'vector' : `documents[${i}].vector`;
      if (d.vector !== undefined) parseVector(d.vector, c.dimension, c.metric, where);
      else if (!c.hasEmbedder) {
        throw new FirkinError('bad_request', `document ${JSON.stringify(d.id)} has no vector and the collection has no embedder: send a vector, or create the collection with one`);
      }
      return docRequest(d);
    });
    for (const part of [bodies.filter((b) => b.vector === undefined), bodies.filter((b) => b.vector !== undefined)]) {
      if (part.length === 0) continue;
      const results = await this.#engine.putDocs({ collection: internal, docs: part }).catch(collectionGone);
      const failed = results.find((r) => r.error !== undefined);
      if (failed !== undefined) {
        const code = (ERROR_CODES as readonly string[]).includes(failed.error!) ? (failed.error as ErrorCode) : 'bad_request';
        throw new FirkinError(code, `document ${JSON.stringify(failed.id)}: ${failed.message ?? failed.error}`);
      }
    }
  }

  async getDocument(internal: string, id: string): Promise<GatewayDocument | undefined> {
    try {
      const doc = await this.#engine.getDoc(internal, id);
      return { id: doc.id, text: doc.text, metadata: doc.metadata, vector: Array.from(doc.vector) };
    } catch (err) {
      if (isCode(err, 'not_found')) return undefined;
      throw err;
    }
  }

  async deleteDocument(internal: string, id: string): Promise<boolean> {
    try {
      await this.#engine.deleteDoc(internal, id);
      return true;
    } catch (err) {
      if (isCode(err, 'not_found')) return false;
      throw err;
    }
  }

  async search(internal: string, search: GatewaySearch): Promise<GatewayHit[]> {
    // A partial answer (a shard with no reachable leader) is served as what the shards found.
    const { results: hits } = await this.#engine.search(searchRequest(internal, search)).catch(collectionGone);
    return hits.map((h) => ({ id: h.id, score: h.score, text: h.text, metadata: h.metadata }));
  }

  async scroll(internal: string, page: GatewayScroll): Promise<GatewayScrollPage> {
    const { documents, next } = await this.#engine.scroll(scrollRequest(internal, { limit: page.limit, ...(page.offset === undefined ? {} : { offset: page.offset }), ...(page.filter === undefined ? {} : { filter: page.filter }) })).catch(collectionGone);
    return { documents: documents.map((d) => ({ id: d.id, text: d.text, metadata: d.metadata })), next };
  }
}
