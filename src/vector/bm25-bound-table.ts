// The disk BM25 backend's term bounds (df, tf max, shortest document) by term number, in typed
// columns: one map lookup a term a batch, no object per bound. Two layers: `committed` (what
// searches rank with) and `ahead` (as every prepared, not yet applied change leaves it: what the
// next change builds on). Pure: no I/O, time or randomness.
import type { TermBound } from './bm25-maxscore.js';

/** docLengthMin of a term with no postings (the layers' columns are unsigned). */
const NO_LENGTH = 0xffff_ffff;

class Columns {
  df: Uint32Array;
  tfMax: Uint32Array;
  lengthMin: Uint32Array;

  constructor(capacity: number) {
    this.df = new Uint32Array(capacity);
    this.tfMax = new Uint32Array(capacity);
    this.lengthMin = new Uint32Array(capacity).fill(NO_LENGTH);
  }

  grow(capacity: number): void {
    const grown = (from: Uint32Array, fill: number) => {
      const to = new Uint32Array(capacity).fill(fill, from.length);
      to.set(from);
      return to;
    };
    this.df = grown(this.df, 0);
    this.tfMax = grown(this.tfMax, 0);
    this.lengthMin = grown(this.lengthMin, NO_LENGTH);
  }

  set(n: number, df: number, tfMax: number, lengthMin: number): void {
    this.df[n] = df;
    this.tfMax[n] = df === 0 ? 0 : tfMax;
    this.lengthMin[n] = df === 0 ? NO_LENGTH : lengthMin;
  }

  copy(n: number, from: Columns, m = n): void {
    this.df[n] = from.df[m]!;
    this.tfMax[n] = from.tfMax[m]!;
    this.lengthMin[n] = from.lengthMin[m]!;
  }

  bound(n: number): TermBound | undefined {
    const df = this.df[n]!;
    return df === 0 ? undefined : { df, tfMax: this.tfMax[n]!, docLengthMin: this.lengthMin[n]! };
  }
}

/**
 * The bounds one change sets, by term number, in its terms' order (df 0: the term's last posting
 * goes, and its tf max and shortest document are 0).
 */
export interface BoundChange {
  readonly numbers: Int32Array;
  readonly df: Uint32Array;
  readonly tfMax: Uint32Array;
  readonly lengthMin: Uint32Array;
}

/** The bound a change sets for its `i`th term (undefined: the term's last posting goes). */
export function boundAt(change: BoundChange, i: number): TermBound | undefined {
  return change.df[i] === 0 ? undefined : { df: change.df[i]!, tfMax: change.tfMax[i]!, docLengthMin: change.lengthMin[i]! };
}

export class TermBoundTable {
  #numbers = new Map<string, number>();
  #names: string[] = [];
  #committed: Columns;
  #ahead: Columns;
  /** Prepared changes not applied or abandoned that set each term (its ahead bound differs while > 0). */
  #touches: Uint16Array;
  /** Terms changed since the last fold: their stamp is the current epoch. */
  #unfolded: Uint32Array;
  #unfoldedEpoch = 1;
  #liveAtCompaction = 0;
  readonly #goneSlack: number;

  /**
   * `goneSlack`: numbers dealt beyond twice the live ones (at the last count) and this many are
   * reclaimed at the next point with nothing pending (a shard whose terms come and go must not
   * keep every term it ever had).
   */
  constructor(bounds: Iterable<[string, TermBound]> = [], goneSlack = 4_096) {
    this.#goneSlack = goneSlack;
    const capacity = 1_024;
    this.#committed = new Columns(capacity);
    this.#ahead = new Columns(capacity);
    this.#touches = new Uint16Array(capacity);
    this.#unfolded = new Uint32Array(capacity);
    for (const [term, bound] of bounds) {
      const n = this.numberOf(term);
      this.#committed.set(n, bound.df, bound.tfMax, bound.docLengthMin);
      this.#ahead.copy(n, this.#committed);
    }
    this.#liveAtCompaction = this.#names.length;
  }

  /** Numbers dealt (live or not). */
  get size(): number {
    return this.#names.length;
  }

  /** The term's number, dealt if it has none (a new term has no bound in either layer). */
  numberOf(term: string): number {
    let n = this.#numbers.get(term);
    if (n === undefined) {
      n = this.#names.length;
      if (n === this.#committed.df.length) this.#grow(2 * n);
      this.#numbers.set(term, n);
      this.#names.push(term);
    }
    return n;
  }

  nameOf(n: number): string {
    return this.#names[n]!;
  }

  /** The committed bound: what searches rank with. */
  committed(term: string): TermBound | undefined {
    const n = this.#numbers.get(term);
    return n === undefined ? undefined : this.#committed.bound(n);
  }

  aheadDf(n: number): number {
    return this.#ahead.df[n]!;
  }
  aheadTfMax(n: number): number {
    return this.#ahead.tfMax[n]!;
  }
  /** Infinity when the term has no postings. */
  aheadLengthMin(n: number): number {
    return this.#ahead.df[n] === 0 ? Number.POSITIVE_INFINITY : this.#ahead.lengthMin[n]!;
  }
  aheadBound(n: number): TermBound | undefined {
    return this.#ahead.bound(n);
  }

  /** A change prepared: its bounds become the ahead layer's. */
  prepared(change: BoundChange): void {
    for (let i = 0; i < change.numbers.length; i++) {
      const n = change.numbers[i]!;
      this.#ahead.set(n, change.df[i]!, change.tfMax[i]!, change.lengthMin[i]!);
      this.#touches[n]!++;
    }
  }

  /** The oldest prepared change applied: its bounds become the committed layer's. */
  applied(change: BoundChange): void {
    for (let i = 0; i < change.numbers.length; i++) {
      const n = change.numbers[i]!;
      this.#committed.set(n, change.df[i]!, change.tfMax[i]!, change.lengthMin[i]!);
      this.#touches[n]!--;
    }
  }

  /**
   * A prepared change abandoned, `rest` the prepared changes still pending, oldest first: its
   * terms' ahead bounds are the committed ones with the rest's laid over them, in order.
   */
  abandoned(change: BoundChange, rest: readonly BoundChange[]): void {
    const affected = new Set<number>();
    for (const n of change.numbers) {
      this.#touches[n]!--;
      affected.add(n);
      this.#ahead.copy(n, this.#committed);
    }
    for (const other of rest) {
      for (let i = 0; i < other.numbers.length; i++) {
        const n = other.numbers[i]!;
        if (affected.has(n)) this.#ahead.set(n, other.df[i]!, other.tfMax[i]!, other.lengthMin[i]!);
      }
    }
  }

  /**
   * The exact bound of a term's committed list, read whole: the committed layer takes it, and the
   * ahead layer too unless a prepared change sets the term (its postings are not in the list).
   */
  tightened(term: string, bound: TermBound): void {
    const n = this.#numbers.get(term);
    if (n === undefined) return;
    this.#committed.set(n, bound.df, bound.tfMax, bound.docLengthMin);
    if (this.#touches[n] === 0) this.#ahead.copy(n, this.#committed);
  }

  markUnfolded(n: number): void {
    this.#unfolded[n] = this.#unfoldedEpoch;
  }

  isUnfolded(n: number): boolean {
    return this.#unfolded[n] === this.#unfoldedEpoch;
  }

  /** Every term changed since the last fold: their 'f' keys are written by the next fold. */
  unfoldedNumbers(): number[] {
    const out: number[] = [];
    for (let n = 0; n < this.#names.length; n++) if (this.#unfolded[n] === this.#unfoldedEpoch) out.push(n);
    return out;
  }

  /** A fold applied: no term is unfolded. */
  folded(): void {
    this.#unfoldedEpoch++;
  }

  /**
   * Reclaims the numbers of terms with no postings and nothing to fold, once they are many. Only
   * with no change pending (a pending change holds numbers): false if it did nothing.
   */
  compactIfSparse(pending: number): boolean {
    if (pending > 0 || this.#names.length <= 2 * this.#liveAtCompaction + this.#goneSlack) return false;
    let live = 0;
    for (let n = 0; n < this.#names.length; n++) if (this.#isLive(n)) live++;
    const capacity = Math.max(1_024, 2 * live);
    const committed = new Columns(capacity);
    const unfolded = new Uint32Array(capacity);
    const numbers = new Map<string, number>();
    const names: string[] = [];
    for (let n = 0; n < this.#names.length; n++) {
      if (!this.#isLive(n)) continue;
      const m = names.length;
      names.push(this.#names[n]!);
      numbers.set(this.#names[n]!, m);
      committed.copy(m, this.#committed, n);
      unfolded[m] = this.#unfolded[n]!;
    }
    this.#numbers = numbers;
    this.#names = names;
    this.#committed = committed;
    // Nothing pending: ahead is committed.
    this.#ahead = new Columns(capacity);
    this.#ahead.df.set(committed.df);
    this.#ahead.tfMax.set(committed.tfMax);
    this.#ahead.lengthMin.set(committed.lengthMin);
    this.#touches = new Uint16Array(capacity);
    this.#unfolded = unfolded;
    this.#liveAtCompaction = live;
    return true;
  }

  #isLive(n: number): boolean {
    return this.#committed.df[n] !== 0 || this.#ahead.df[n] !== 0 || this.#touches[n] !== 0 || this.#unfolded[n] === this.#unfoldedEpoch;
  }

  #grow(capacity: number): void {
    this.#committed.grow(capacity);
    this.#ahead.grow(capacity);
    const touches = new Uint16Array(capacity);
    touches.set(this.#touches);
    this.#touches = touches;
    const unfolded = new Uint32Array(capacity);
    unfolded.set(this.#unfolded);
    this.#unfolded = unfolded;
  }
}
