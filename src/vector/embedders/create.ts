// Makes a collection's embedder from its config.
import type { EmbedderConfig } from '../collection-config.js';
import type { Embedder } from './embedder.js';
import { hashEmbed } from './hash.js';
import { type HttpEmbedderDeps, httpEmbedder } from './http.js';

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
