// The narrow slice of the vector engine the gateway uses, by internal collection name
// (names.ts). `vector-adapter.ts` implements it over the real engine; the gateway never
// touches the engine otherwise, so a clustered engine can stand behind the same interface.
import type { Embedder } from './types.js';

export interface GatewayDocument {
  readonly id: string;
  readonly text?: string;
  readonly metadata?: Record<string, unknown>;
  readonly vector?: readonly number[];
}

export interface GatewayHit {
  readonly id: string;
  readonly score: number;
  readonly text?: string;
  readonly metadata?: Record<string, unknown>;
}

export interface GatewaySearch {
  readonly query?: string;
  readonly vector?: readonly number[];
  readonly k: number;
  /** Top-level metadata key -> exactly equal JSON value. */
  readonly filter?: Record<string, unknown>;
}

export interface GatewayScroll {
  /** The id the page starts at (inclusive); undefined: the first. */
  readonly offset?: string;
  readonly limit: number;
  /** As a search's filter. */
  readonly filter?: Record<string, unknown>;
}

export interface GatewayScrollPage {
  readonly documents: GatewayDocument[];
  /** Where the next page starts; undefined after the last. */
  readonly next: string | undefined;
}

export interface GatewayVectors {
  /** Throws FirkinError when the name is taken or the options are invalid. */
  createCollection(internal: string, options: { dimension: number; embedder?: Embedder }): Promise<void>;
  /** Undefined when there is no such collection. */
  collectionInfo(internal: string): Promise<{ dimension: number; count: number } | undefined>;
  /** Every collection name in the engine (start-up looks for tenant-shaped ones without a record). */
  listCollections(): Promise<string[]>;
  /** False when there was nothing to delete. */
  deleteCollection(internal: string): Promise<boolean>;
  /** All documents or none (a bad document fails the whole call with a FirkinError). */
  upsert(internal: string, docs: readonly GatewayDocument[]): Promise<void>;
  getDocument(internal: string, id: string): Promise<GatewayDocument | undefined>;
  /** False when there was no such document. */
  deleteDocument(internal: string, id: string): Promise<boolean>;
  search(internal: string, search: GatewaySearch): Promise<GatewayHit[]>;
  /** A page of the collection's documents in id order (no vectors). */
  scroll(internal: string, page: GatewayScroll): Promise<GatewayScrollPage>;
}

/** The vector engine's bounds, as far as the gateway checks them itself. */
export interface V1Bounds {
  dimensionMax: number;
  kMax: number;
  embedderTypes: readonly string[];
}
