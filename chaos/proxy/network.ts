// A fault network for a cluster on loopback: one `Link` per ordered pair of nodes, so every
// node dials each peer through a proxy of its own (node A's view of B can fail while B's view
// of A does not). Nemeses are descriptions (plan.ts); `apply` plans them and sets every link.
//
// Wiring: node A starts with SERVICE_CLUSTER_DIAL_MAP=dialMap('A') and joins through
// seedFor('A', seed). Client HTTP traffic never passes through here.
import type { Rand } from '../../src/core/rand.js';
import { Link, type LinkStats } from './link.js';
import { type Nemesis, type NetworkPlan, linkKey, orderedPairs, planNetwork } from './plan.js';

export interface FaultNetworkOptions {
  /** Node name → the port its gRPC listener really uses (on 127.0.0.1). */
  grpcPorts: ReadonlyMap<string, number>;
  /** Jitter draws for every link: inject a seeded one so a run replays. */
  rand: Rand;
  /** Where the proxy of link from->to listens; default 0 (any free port). */
  proxyPort?(from: string, to: string): number;
}

export class FaultNetwork {
  readonly nodes: readonly string[];
  readonly #links: ReadonlyMap<string, Link>;
  #active: readonly Nemesis[] = [];

  private constructor(nodes: readonly string[], links: ReadonlyMap<string, Link>) {
    this.nodes = nodes;
    this.#links = links;
  }

  static async open(o: FaultNetworkOptions): Promise<FaultNetwork> {
    const nodes = [...o.grpcPorts.keys()];
    const links = new Map<string, Link>();
    try {
      for (const [from, to] of orderedPairs(nodes)) {
        const port = o.proxyPort?.(from, to) ?? 0;
        links.set(linkKey(from, to), await Link.open({ port, targetPort: o.grpcPorts.get(to)!, rand: o.rand, name: linkKey(from, to) }));
      }
    } catch (err) {
      await Promise.all([...links.values()].map((l) => l.close())); // no half-open network behind a failed start
      throw err;
    }
    return new FaultNetwork(nodes, links);
  }

  link(from: string, to: string): Link {
    const l = this.#links.get(linkKey(from, to));
    if (l === undefined) throw new Error(`no link ${linkKey(from, to)}: nodes are ${this.nodes.join(',')}`);
    return l;
  }

  /** SERVICE_CLUSTER_DIAL_MAP for `node`: every peer, at the proxy of the link node->peer. */
  dialMap(node: string): string {
    return this.nodes
      .filter((peer) => peer !== node)
      .map((peer) => `${peer}=${this.link(node, peer).address}`)
      .join(',');
  }

  /** The seed address `node` should join through to reach `seedNode` (its proxy). */
  seedFor(node: string, seedNode: string): string {
    return this.link(node, seedNode).address;
  }

  /** A node restarted on another gRPC port: new connections to it go there. */
  retarget(node: string, grpcPort: number): void {
    for (const from of this.nodes) if (from !== node) this.link(from, node).retarget(grpcPort);
  }

  /** Replace the network's faults with these nemeses, combined (plan.ts); live connections follow. */
  apply(nemeses: Nemesis | readonly Nemesis[]): NetworkPlan {
    const list = Array.isArray(nemeses) ? (nemeses as readonly Nemesis[]) : [nemeses as Nemesis];
    const plan = planNetwork(this.nodes, list);
    for (const [key, faults] of plan) this.#links.get(key)!.set(faults);
    this.#active = list;
    return plan;
  }

  /** What `apply` was last given. */
  active(): readonly Nemesis[] {
    return this.#active;
  }

  partition(sides: readonly (readonly string[])[]): NetworkPlan {
    return this.apply({ kind: 'partition', sides });
  }

  isolate(node: string): NetworkPlan {
    return this.apply({ kind: 'isolate', node });
  }

  majorityMinority(minority?: readonly string[]): NetworkPlan {
    return this.apply(minority === undefined ? { kind: 'majority-minority' } : { kind: 'majority-minority', minority });
  }

  bridge(a: readonly string[], b: readonly string[], hub: string): NetworkPlan {
    return this.apply({ kind: 'bridge', a, b, hub });
  }

  oneWay(from: string, to: string): NetworkPlan {
    return this.apply({ kind: 'one-way', from, to });
  }

  delay(ms: number, jitterMs: number): NetworkPlan {
    return this.apply({ kind: 'delay', ms, jitterMs });
  }

  throttle(bytesPerSecond: number): NetworkPlan {
    return this.apply({ kind: 'throttle', bytesPerSecond });
  }

  heal(): NetworkPlan {
    return this.apply({ kind: 'heal' });
  }

  /** Reset every connection of one link now, and refuse new ones until the next apply. */
  cut(from: string, to: string): void {
    this.link(from, to).cut();
  }

  stats(): Map<string, LinkStats> {
    return new Map([...this.#links].map(([key, l]) => [key, l.stats()]));
  }

  async close(): Promise<void> {
    await Promise.all([...this.#links.values()].map((l) => l.close()));
  }
}
