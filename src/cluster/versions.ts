// Which Firkin each member runs, as the metadata records it (each node writes its own version
// into its record when it joins or restarts on another build). Members on different versions
// are a rolling upgrade under way, or one forgotten: a newer node may ask an older one for
// something it cannot serve, so /health says so until every member runs the same build.
import type { NodeRecord } from './meta-state.js';

/** A record written by a node older than the versions in the records: it wrote none. */
export const UNKNOWN_VERSION = 'older (unrecorded)';

/** The live members by the version they run, versions in a stable order, names sorted. */
export function membersByVersion(nodes: readonly Pick<NodeRecord, 'name' | 'version'>[]): Map<string, string[]> {
  const byVersion = new Map<string, string[]>();
  for (const n of [...nodes].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const v = n.version ?? UNKNOWN_VERSION;
    byVersion.set(v, [...(byVersion.get(v) ?? []), n.name]);
  }
  return new Map([...byVersion].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** The /health problem when the members run more than one version; undefined when they agree. */
export function mixedVersionsProblem(nodes: readonly Pick<NodeRecord, 'name' | 'version'>[]): string | undefined {
  const byVersion = membersByVersion(nodes);
  if (byVersion.size <= 1) return undefined;
  const parts = [...byVersion].map(([v, names]) => `${names.join(', ')} on ${v}`);
  return `members run different versions (${parts.join('; ')}): finish the rolling upgrade, as a newer node's requests may be refused by an older one`;
}
