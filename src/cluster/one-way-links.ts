// Peers this node hears from but cannot dial. A node whose advertised gRPC address
// (SERVICE_GRPC_ADVERTISE) the others cannot reach still dials them itself, so its heartbeats
// arrive and the failure detector calls it up, while nothing sent to it (its log, calls)
// gets there: it joins and stays `joining` for good, and nothing else said why.

export interface PeerLinkView {
  readonly name: string;
  /** When a frame from it last arrived (any link), if ever. */
  readonly heardMs: number | undefined;
  /** The link this node dials to it is down and its dials fail. */
  readonly failure: { readonly address: string; readonly why: string; readonly sinceMs: number } | undefined;
}

export interface OneWayPeer {
  readonly name: string;
  readonly address: string;
  readonly why: string;
  readonly forMs: number;
}

/** Peers heard within `heardWithinMs` whose dials have failed for `reportAfterMs` or more. */
export function oneWayPeers(peers: readonly PeerLinkView[], o: { readonly nowMs: number; readonly heardWithinMs: number; readonly reportAfterMs: number }): OneWayPeer[] {
  const out: OneWayPeer[] = [];
  for (const p of peers) {
    if (p.heardMs === undefined || o.nowMs - p.heardMs >= o.heardWithinMs || p.failure === undefined) continue;
    const forMs = o.nowMs - p.failure.sinceMs;
    if (forMs >= o.reportAfterMs) out.push({ name: p.name, address: p.failure.address, why: p.failure.why, forMs });
  }
  return out;
}

/** The socket's own reason out of grpc-js's wrapping ("14 UNAVAILABLE: No connection established. Last error: Error: connect ECONNREFUSED …. Resolution note: "). */
export function dialReason(why: string): string {
  const inner = /Last error: (?:Error: )?(.*?)(?:\. Resolution note:.*)?$/s.exec(why)?.[1];
  return inner === undefined || ['', 'null', 'undefined'].includes(inner.trim()) ? why : inner.trim();
}

/** One /health problem per such peer, in words an operator can act on. */
export function describeOneWay(p: OneWayPeer): string {
  return `node ${p.name} reaches this node, but this node has not reached ${p.name} at ${p.address} (the gRPC address it advertises) for ${Math.round(p.forMs / 1000)} s: ${dialReason(p.why)}; check ${p.name}'s SERVICE_GRPC_ADVERTISE`;
}
