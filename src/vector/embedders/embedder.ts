// What an embedder is: it turns texts into vectors. `create.ts` makes one from a collection's
// config; the kinds live beside it (`hash.ts` built in, `http.ts` for ollama and openai). A
// collection without an embedder accepts vectors only.
import { FirkinError } from '../../core/errors.js';
import type { EmbedderConfig } from '../collection-config.js';

export interface Embedder {
  readonly type: EmbedderConfig['type'];
  /** One vector per text, in order. Fails with `bad_gateway` when the service fails. */
  embed(texts: readonly string[]): Promise<Float32Array[]>;
}

export function noEmbedder(what: string): FirkinError {
  return new FirkinError(
    'bad_request',
    `${what} needs an embedder, and this collection has none: send a vector, or create the collection with an embedder ({"embedder": {"type": "hash"}}, "ollama" or "openai")`,
  );
}
