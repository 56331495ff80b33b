// Writes to a VDB pass a gate; a rebalance closes it for the short moment in which it
// copies the last changes and switches ranges. Closing waits for writes in flight.
export class WriteGate {
  #inFlight = 0;
  #closed: Promise<void> | undefined;
  #reopen: (() => void) | undefined;
  #drained: (() => void) | undefined;

  async enter(): Promise<() => void> {
    while (this.#closed !== undefined) await this.#closed;
    this.#inFlight++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.#inFlight--;
      if (this.#inFlight === 0) this.#drained?.();
    };
  }

  /** Stop new writes and wait until those in flight are done. */
  async close(): Promise<void> {
    if (this.#closed !== undefined) throw new Error('gate already closed');
    this.#closed = new Promise((resolve) => (this.#reopen = resolve));
    if (this.#inFlight > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
    this.#drained = undefined;
  }

  open(): void {
    const reopen = this.#reopen;
    this.#closed = undefined;
    this.#reopen = undefined;
    reopen?.();
  }
}
