// Embedders turn texts into vectors. `hash` is built in; `ollama` and `openai` call an HTTP
// service (see http.ts). A collection without an embedder accepts vectors only.
import { FirkinError } from '../../core/errors.js';
import type { EmbedderConfig } from '../collection-config.js';
import { hashEmbed } from './hash.js';
import { type HttpEmbedderDeps, httpEmbedder } from './http.js';

export interface Embedder {
  readonly type: EmbedderConfig['type'];
  /** One vector per text, in order. Fails with `bad_gateway` when the service fails. */
  embed(texts: readonly string[]): Promise<Float32Array[]>;
}

export type EmbedderDeps = HttpEmbedderDeps;

export function createEmbedder(config: EmbedderConfig, dimensions: number, deps: EmbedderDeps): Embedder {
  switch (config.type) {
    case 'hash':
      return { type: 'hash', embed: async (texts) => texts.map((t) => hashEmbed(t, dimensions)) };
    case 'ollama':
    case 'openai':
      return httpEmbedder(config, deps);
  }
}

export function noEmbedder(what: string): FirkinError {
  return new FirkinError(
    'bad_request',
    `${what} needs an embedder, and this collection has none: send a vector, or create the collection with an embedder ({"embedder": {"type": "hash"}}, "ollama" or "openai")`,
  );
}
