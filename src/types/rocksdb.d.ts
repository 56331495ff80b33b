// The subset of @nxtedition/rocksdb (an abstract-level store) that storage/db.ts uses.
declare module '@nxtedition/rocksdb' {
  export interface RocksIterator {
    nextv(size: number): Promise<[Buffer, Buffer][]>;
    close(): Promise<void>;
  }
  export class RocksLevel {
    constructor(location: string, options?: Record<string, unknown>);
    open(options?: Record<string, unknown>): Promise<void>;
    close(): Promise<void>;
    readonly columns: Record<string, unknown>;
    readonly handle: bigint;
    readonly status: string;
    getMany(keys: Buffer[], options?: Record<string, unknown>): Promise<(Buffer | undefined)[]>;
    batch(ops: unknown[], options?: Record<string, unknown>): Promise<void>;
    iterator(options?: Record<string, unknown>): RocksIterator;
    clear(options?: Record<string, unknown>): Promise<void>;
    getProperty(name: string): string;
  }
}
