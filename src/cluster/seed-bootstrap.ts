// Pure: whether a node started with seeds, and no cluster, starts the cluster itself.
//
// Nodes deployed with one configuration (every node's SERVICE_SEED_NODES naming every node,
// its own address included, as a StatefulSet gives its pods) would otherwise never form a
// cluster: a cluster starts only on a node without seeds. They form one when every seed has
// been heard from: each other seed answered that it is looking for a cluster too (no cluster
// data at all) and names exactly the same seed list. Then the node whose own address is the
// lowest of the list starts the cluster, and the others join it as any joiner does.
//
// At most one node of such a set starts a cluster: they share one list, so one lowest address.
// A node whose list differs from any answer's starts nothing (two lists could have two
// lowest addresses), and a seed not heard from (down, unreachable, or a member, which answers
// otherwise) keeps everyone waiting: a cluster may already exist behind it.

/** What a seed answered last. */
export type SeedAnswer =
  | { readonly kind: 'self' }
  /** Looking for a cluster itself, with this seed list (normalised). */
  | { readonly kind: 'joining'; readonly seeds: readonly string[] }
  /** Anything else: unreachable, a member that could not take the join now, an error. */
  | { readonly kind: 'other' };

/**
 * A seed's answer from the details of its refusal (what crossed the link): this node itself,
 * a node looking for a cluster with its (well-formed) list, or anything else.
 */
export function seedAnswerOf(details: Readonly<Record<string, unknown>> | undefined): SeedAnswer {
  if (details?.self === true) return { kind: 'self' };
  const seeds = details?.seeds;
  if (details?.joining === true && Array.isArray(seeds) && seeds.every((x) => typeof x === 'string')) return { kind: 'joining', seeds };
  return { kind: 'other' };
}

/** The seed list as nodes compare it: trimmed, without empties and repeats, sorted. */
export function normaliseSeeds(seeds: readonly string[]): string[] {
  return [...new Set(seeds.map((s) => s.trim()).filter((s) => s !== ''))].sort();
}

/**
 * True when this node should start the cluster now. `answers`: the last answer of each seed
 * (a seed not asked yet is missing).
 */
export function shouldBootstrapFromSeeds(seeds: readonly string[], answers: ReadonlyMap<string, SeedAnswer>): boolean {
  const mine = normaliseSeeds(seeds);
  if (mine.length < 2) return false;
  const own = mine.filter((s) => answers.get(s)?.kind === 'self');
  // Exactly one of the seeds is this node: two would mean two names for one node, or a list
  // that other nodes read differently.
  if (own.length !== 1 || own[0] !== mine[0]) return false;
  return mine.every((s) => {
    const a = answers.get(s);
    if (a === undefined) return false;
    if (a.kind === 'self') return true;
    return a.kind === 'joining' && a.seeds.length === mine.length && a.seeds.every((x, i) => x === mine[i]);
  });
}
