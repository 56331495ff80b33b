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

/**
 * Runs `tasks` in their order wherever they share a key: a task starts once every earlier task
 * with one of its keys has finished, and tasks with no key in common overlap, at most `limit`
 * at a time (a task waiting for an earlier one holds its place). Resolves when all have
 * finished; on a failure, rejects with the first one once the running tasks have settled, and
 * no task starts after it (nor any that waits on the failed one).
 */
export async function runInKeyOrder<T>(tasks: readonly T[], keysOf: (task: T) => readonly string[], run: (task: T) => Promise<void>, limit: number): Promise<void> {
  const last = new Map<string, Promise<void>>();
  const running = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;
  for (const task of tasks) {
    while (running.size >= limit) await Promise.race(running);
    if (failure !== undefined) break;
    const keys = [...new Set(keysOf(task))];
    const before = keys.flatMap((k) => last.get(k) ?? []);
    const done = Promise.all(before).then(() => (failure === undefined ? run(task) : undefined));
    for (const k of keys) last.set(k, done);
    const settled: Promise<void> = done.then(
      () => undefined,
      (error: unknown) => {
        failure ??= { error };
      },
    );
    running.add(settled);
    void settled.then(() => running.delete(settled));
  }
  await Promise.all(running);
  if (failure !== undefined) throw failure.error;
}

/**
 * Waits for every promise to settle, then rejects with the first failure (in the given order),
 * if any: unlike Promise.all, nothing started here is still running when it answers.
 */
export async function settleAll(work: readonly Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(work)).find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}
