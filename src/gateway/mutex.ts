// One async lock per name: work for the same tenant runs one at a time, in arrival order, so
// a quota check and the write it guards cannot interleave with another write of that tenant.
export class KeyedMutex {
  readonly #tails = new Map<string, Promise<void>>();

  async run<T>(name: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(name) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => mine);
    this.#tails.set(name, tail);
    await previous;
    try {
      return await work();
    } finally {
      release();
      // The last one out removes the entry, so the map holds only names with work queued.
      if (this.#tails.get(name) === tail) this.#tails.delete(name);
    }
  }
}
