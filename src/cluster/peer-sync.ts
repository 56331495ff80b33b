// Which transport peers a node keeps, from its applied copy of the metadata (pure).
//
// A node recorded as `left` is dropped from the transport (it is gone for good: no more
// redials), but not while its link is up, nor while it leads the metadata group as far as this
// node knows. A copy of the metadata can be far behind: a node that joined again on an empty
// disk replays the log from its start, and an old `left` of a peer that has since joined again
// under the same name would cut the link this node answers that peer on. When that peer leads,
// this node can then never catch up, since its answers never reach the leader (chaos seed 108:
// n2 stuck at index 256, right after n1's old `left`, for the rest of the run). A live link
// says the peer is there; the entries after catch-up say what it is. So does a peer that is
// talking to this node: a link dropped while it was down (a partition, a restart) and while
// another node led comes back once that peer is heard from again, at its recorded address
// (chaos seed 184: n3 replayed n1's old `left` while cut off from it, dropped its link, and
// n1, leader again, never got n3's answers: n3's metadata lagged for good).

export interface PeerRecord {
  readonly name: string;
  readonly status: string;
  readonly grpc: string;
}

export interface PeerView {
  self: string;
  /** The metadata leader this node knows, if any. */
  leader: string | null;
  /** Whether this node's link to `peer` is up now. */
  connected(peer: string): boolean;
  /** Whether this node has a link to `peer` at all (up or redialling). */
  hasLink(peer: string): boolean;
  /** Whether `peer` has been heard from lately (on any link, its own included). */
  heard(peer: string): boolean;
  /** The address to dial `peer` at (its advertised one, or a test's dial map). */
  address(peer: string, advertised: string): string;
}

/**
 * What to do with each peer: dial it at an address, or drop it. `heardLeft`: peers recorded
 * as left that are talking to this node, with their recorded addresses: kept, and dialled
 * again where their link was dropped. `missing`: members (not left) this node has no link to
 * at all: nothing this node sends reaches them (its Raft messages ride on its own links), so
 * they are dialled at their recorded address whatever the caller's round. No known path leaves
 * a member without a link; CI's short-data seed 1 (2026-12-02) ended with a replica its
 * leader's messages never reached, and a member without a link is one way to get there.
 */
export function peerChanges(nodes: readonly PeerRecord[], view: PeerView): { set: [string, string][]; remove: string[]; heardLeft: [string, string][]; missing: [string, string][] } {
  const set: [string, string][] = [];
  const remove: string[] = [];
  const heardLeft: [string, string][] = [];
  const missing: [string, string][] = [];
  for (const n of nodes) {
    if (n.name === view.self) continue;
    const dial: [string, string] = [n.name, view.address(n.name, n.grpc)];
    if (n.status !== 'left') {
      set.push(dial);
      if (!view.hasLink(n.name)) missing.push(dial);
    } else if (view.heard(n.name)) heardLeft.push(dial);
    else if (n.name !== view.leader && !view.connected(n.name)) remove.push(n.name);
  }
  return { set, remove, heardLeft, missing };
}
