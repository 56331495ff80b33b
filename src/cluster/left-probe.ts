// Whom a node asks whether its leave (or an operator's removal) has been committed, once it is
// out of the metadata group or has no leader (pure).

/**
 * On the `probe`-th try: the leader it last knew, then every other member in turn. Out of the
 * group a node hears of no new leader, and the one it knew may have left or died since: asking
 * it alone, forever, kept a leaving node from learning that it had left (found by the chaos
 * runner's `replace` nemesis: two nodes leaving one after the other, the first the leader).
 */
export function leftProbeTarget(leader: string | null, self: string, members: readonly string[], probe: number): string | undefined {
  const others = members.filter((m) => m !== self && m !== leader);
  const order = leader !== null && leader !== self ? [leader, ...others] : others;
  return order.length === 0 ? undefined : order[probe % order.length];
}
