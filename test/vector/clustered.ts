// Seeded clustered vectors for the recall test and the bench: `clusters` centres uniform in
// [-1, 1]^d, each point a centre plus Gaussian noise. Same seed, same data.
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function clusteredVectors(options: { seed: number; count: number; dims: number; clusters: number; noise: number }): Float32Array[] {
  const rand = mulberry32(options.seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  const centres = Array.from({ length: options.clusters }, () => Float32Array.from({ length: options.dims }, () => rand() * 2 - 1));
  return Array.from({ length: options.count }, () => {
    const c = centres[Math.floor(rand() * centres.length)]!;
    return Float32Array.from(c, (x) => x + gauss() * options.noise);
  });
}

/** Exact top-k ids by cosine similarity (the oracle). */
export function bruteForceCosine(data: readonly Float32Array[], query: Float32Array, k: number): number[] {
  const qn = Math.sqrt(query.reduce((s, x) => s + x * x, 0));
  const best: { i: number; s: number }[] = [];
  for (let i = 0; i < data.length; i++) {
    const v = data[i]!;
    let dot = 0;
    let vn = 0;
    for (let d = 0; d < v.length; d++) {
      dot += v[d]! * query[d]!;
      vn += v[d]! * v[d]!;
    }
    const s = dot / (Math.sqrt(vn) * qn);
    if (best.length < k || s > best[best.length - 1]!.s) {
      best.push({ i, s });
      best.sort((a, b) => b.s - a.s);
      if (best.length > k) best.pop();
    }
  }
  return best.map((x) => x.i);
}
