// The V8 flags every Firkin node process runs with. A bulk write keeps its request's documents
// alive across awaits for tens of milliseconds while it allocates keys, encodings and batches;
// with V8's default 16 MB semi-spaces they outlive two scavenges, get promoted, and are then
// collected by the far costlier old-generation GC. 32 MB semi-spaces cut a `_bulk_docs` load's
// main-thread CPU by ~14 % (bench/ab.ts bulk-docs; docs/benchmarks.md); 128 MB was worse.
// V8 reads them only at start (`v8.setFlagsFromString` later changes nothing), so every
// launcher passes them: the TypeScript ones import this list; `npm start`, the Dockerfile and
// scripts/cluster.sh spell it out, and test/core/node-flags.test.ts keeps them equal.
export const NODE_FLAGS: readonly string[] = ['--max-semi-space-size=32'];
