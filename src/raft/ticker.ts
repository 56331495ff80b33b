// One clock for every Raft group on a node: a registry of tick callbacks driven by a single
// interval, instead of one timer per group (a node may host thousands of shard replicas).
export interface Ticker {
  readonly tickMs: number;
  /** Call `onTick` on every tick until the returned function is called. */
  register(onTick: () => void): () => void;
}

export class RaftTicker implements Ticker {
  readonly tickMs: number;
  readonly #callbacks = new Set<() => void>();
  #timer: NodeJS.Timeout | undefined;

  constructor(tickMs: number) {
    this.tickMs = tickMs;
  }

  get size(): number {
    return this.#callbacks.size;
  }

  register(onTick: () => void): () => void {
    // A wrapper per registration, so registering the same function twice is two members.
    const entry = (): void => onTick();
    this.#callbacks.add(entry);
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#tick(), this.tickMs);
      this.#timer.unref();
    }
    return () => {
      this.#callbacks.delete(entry);
      if (this.#callbacks.size === 0 && this.#timer !== undefined) {
        clearInterval(this.#timer);
        this.#timer = undefined;
      }
    };
  }

  #tick(): void {
    for (const onTick of this.#callbacks) onTick();
  }
}
