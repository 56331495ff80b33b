// Which embedder URLs a tenant may name. An embedder URL makes this node send HTTP requests
// wherever the tenant says, so a tenant could reach services that only the node can reach
// (server-side request forgery). Only URLs under a prefix the operator listed
// (SERVICE_GATEWAY_EMBEDDER_URLS) are accepted; a collection without `url` uses the node's
// default for its embedder type.

function normalise(url: string): string | undefined {
  try {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return undefined;
    if (u.username !== '' || u.password !== '') return undefined;
    return `${u.origin}${u.pathname}`.replace(/\/+$/, '');
  } catch {
    return undefined;
  }
}

/** True when `url` is one of the allowed prefixes or below one (path-segment aligned). */
export function embedderUrlAllowed(url: string, allowed: readonly string[]): boolean {
  const u = normalise(url);
  if (u === undefined || /[?#]/.test(url)) return false;
  return allowed.some((prefix) => {
    const p = normalise(prefix);
    return p !== undefined && (u === p || u.startsWith(`${p}/`));
  });
}
