// A catalogue: every record under one key prefix of the `system` column family, held in a
// Map and written through. Small sets read often (API keys, federations, VDBs) live here: the
// Map answers reads, and a write changes memory only after the synced write is durable.
//
//   system: [prefix, storedId(record)] -> codec.encode(record)
import type { Store } from '../storage/db.js';
import type { JsonRecordCodec } from './codec.js';
import { encodeKey, prefixRange } from './keys.js';

export interface CatalogOptions<T> {
  /** The first key part of every record. */
  readonly prefix: string;
  readonly codec: JsonRecordCodec<T>;
  /** The Map key a record is looked up by. */
  readonly keyOf: (record: T) => string;
  /** The id in its storage key, when it differs from `keyOf` (API keys: looked up by digest, stored by id). */
  readonly storedIdOf?: (record: T) => string;
}

export class Catalog<T> {
  readonly #store: Store;
  readonly #o: CatalogOptions<T>;
  readonly #records = new Map<string, T>();

  private constructor(store: Store, options: CatalogOptions<T>) {
    this.#store = store;
    this.#o = options;
  }

  /** Loads every record under the prefix; a record of the wrong shape fails the load. */
  static async open<T>(store: Store, options: CatalogOptions<T>): Promise<Catalog<T>> {
    const catalog = new Catalog(store, options);
    for await (const [, value] of store.entries('system', prefixRange([options.prefix]))) {
      const record = options.codec.decode(value);
      catalog.#records.set(options.keyOf(record), record);
    }
    return catalog;
  }

  get(key: string): T | undefined {
    return this.#records.get(key);
  }

  has(key: string): boolean {
    return this.#records.has(key);
  }

  values(): IterableIterator<T> {
    return this.#records.values();
  }

  keys(): IterableIterator<string> {
    return this.#records.keys();
  }

  get size(): number {
    return this.#records.size;
  }

  /** Adds or replaces a record (synced). */
  async put(record: T): Promise<void> {
    await this.#store.put('system', this.#storageKey(record), this.#o.codec.encode(record), { sync: true });
    this.#records.set(this.#o.keyOf(record), record);
  }

  /** Removes a record (synced); false when there was none. */
  async delete(key: string): Promise<boolean> {
    const record = this.#records.get(key);
    if (record === undefined) return false;
    await this.#store.del('system', this.#storageKey(record), { sync: true });
    this.#records.delete(key);
    return true;
  }

  #storageKey(record: T): Buffer {
    return encodeKey([this.#o.prefix, (this.#o.storedIdOf ?? this.#o.keyOf)(record)]);
  }
}
