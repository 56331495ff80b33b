// One bounded LRU shared by many owners (the databases of a node, its vector shards' payloads
// and keyword lists), each seeing only its own keys through a scope. A cache per owner bounds
// each owner, not the node: 1,000 databases with a 16 MiB cache each may hold 16 GiB, and
// lru-cache allocates a cache's `max` slots up front (0.33 MB of heap a database before its
// first read). One cache bounds the node however many owners it has, and the owners in use
// get the room the idle ones leave.
import { LRUCache } from 'lru-cache';

export class SharedLru<V extends {}> {
  readonly #cache: LRUCache<string, V>;
  #scopes = 0;

  constructor(options: LRUCache.Options<string, V, unknown>) {
    this.#cache = new LRUCache(options);
  }

  /** A view with keys of its own: a key never meets another scope's, even an equal one. */
  scope(): LruScope<V> {
    return new LruScope(this.#cache, `${(this.#scopes++).toString(36)}:`);
  }

  get size(): number {
    return this.#cache.size;
  }

  /** Bytes held, for a cache bounded by `maxSize`. */
  get calculatedSize(): number {
    return this.#cache.calculatedSize;
  }

  /** The bound in bytes (0 for a cache bounded by entries). */
  get maxSize(): number {
    return this.#cache.maxSize;
  }
}

export class LruScope<V extends {}> {
  readonly #cache: LRUCache<string, V>;
  readonly #prefix: string;

  constructor(cache: LRUCache<string, V>, prefix: string) {
    this.#cache = cache;
    this.#prefix = prefix;
  }

  get(key: string): V | undefined {
    return this.#cache.get(this.#prefix + key);
  }

  has(key: string): boolean {
    return this.#cache.has(this.#prefix + key);
  }

  /** The entry without making it recent. */
  peek(key: string): V | undefined {
    return this.#cache.peek(this.#prefix + key);
  }

  /** `size`: the entry's share of a cache bounded by `maxSize`. */
  set(key: string, value: V, size?: number): void {
    this.#cache.set(this.#prefix + key, value, size === undefined ? undefined : { size });
  }

  delete(key: string): void {
    this.#cache.delete(this.#prefix + key);
  }

  /** Every entry of this scope out (its owner is gone): a walk of the whole cache, for rare events. */
  clear(): void {
    const mine: string[] = [];
    for (const key of this.#cache.keys()) if (key.startsWith(this.#prefix)) mine.push(key);
    for (const key of mine) this.#cache.delete(key);
  }
}
