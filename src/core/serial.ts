// One serial queue: jobs run one at a time, in the order they were queued. A job that fails
// rejects its own promise only; the queue goes on with the next one. Every "one writer at a
// time" in Firkin (catalogues, shards, policies, per-tenant gateway locks) is one of these.

export class SerialQueue {
  /** Settles after the last queued job; never rejects (failures belong to their callers). */
  #tail: Promise<unknown> = Promise.resolve();
  #pending = 0;

  /** Runs `job` after every job queued before it has settled. */
  run<T>(job: () => Promise<T>): Promise<T> {
    this.#pending++;
    // The count drops before the caller sees the outcome, so `size` is exact from then on.
    const result = this.#tail.then(job).finally(() => this.#pending--);
    this.#tail = result.catch(() => undefined);
    return result;
  }

  /** Jobs queued or running. */
  get size(): number {
    return this.#pending;
  }

  /** Resolves once every job queued so far has settled. */
  async idle(): Promise<void> {
    await this.#tail;
  }
}

/** One SerialQueue per key: jobs of one key run in order, keys do not wait for each other. */
export class KeyedSerialQueue<K> {
  readonly #queues = new Map<K, SerialQueue>();

  async run<T>(key: K, job: () => Promise<T>): Promise<T> {
    let queue = this.#queues.get(key);
    if (queue === undefined) this.#queues.set(key, (queue = new SerialQueue()));
    try {
      return await queue.run(job);
    } finally {
      // The last job out removes the entry, so the map holds only keys with work queued.
      if (queue.size === 0 && this.#queues.get(key) === queue) this.#queues.delete(key);
    }
  }

  /** Keys with work queued or running. */
  get activeKeys(): number {
    return this.#queues.size;
  }
}
