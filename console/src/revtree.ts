// The revision tree of one document, rebuilt from its leaves' histories
// (`GET /db/:db/:id?open_revs=all&revs=true`: each leaf with `_revisions {start, ids}`,
// newest first) and laid out for an SVG: x by generation, one row per leaf branch.
export interface LeafAnswer {
  ok?: { _rev: string; _deleted?: boolean; _revisions?: { start: number; ids: string[] } };
  missing?: string;
}

export interface RevNode {
  rev: string;
  generation: number;
  parent: string | null;
  row: number;
  kind: 'winner' | 'conflict' | 'deleted' | 'inner';
}

export function buildRevTree(leaves: LeafAnswer[], winnerRev: string): RevNode[] {
  const nodes = new Map<string, RevNode>();
  // Winner first so it takes row 0 and shares it with its whole history.
  const held = leaves.flatMap((l) => (l.ok === undefined ? [] : [l.ok])).sort((a, b) => Number(b._rev === winnerRev) - Number(a._rev === winnerRev));
  held.forEach((leaf, row) => {
    const history = leaf._revisions ?? { start: Number(leaf._rev.split('-', 1)[0]), ids: [leaf._rev.slice(leaf._rev.indexOf('-') + 1)] };
    const revs = history.ids.map((id, i) => `${history.start - i}-${id}`);
    revs.forEach((rev, i) => {
      if (nodes.has(rev)) return;
      const kind = i > 0 ? 'inner' : rev === winnerRev ? 'winner' : leaf._deleted === true ? 'deleted' : 'conflict';
      nodes.set(rev, { rev, generation: history.start - i, parent: revs[i + 1] ?? null, row, kind });
    });
  });
  return [...nodes.values()];
}
