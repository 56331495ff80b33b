// Which remote hosts the node may call on a client's behalf (replication targets, federation
// members, HTTP embedders). URLs in requests are an SSRF risk: a host must be on the
// allow-list (`host` allows every port, `host:port` one port), or be loopback while loopback
// is allowed.
export interface OutboundPolicy {
  readonly allow: readonly string[];
  readonly allowLoopback: boolean;
}

export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

export function outboundAllowed(url: URL, policy: OutboundPolicy): boolean {
  const host = url.hostname.toLowerCase();
  const hostPort = url.host.toLowerCase();
  return (policy.allowLoopback && isLoopbackHost(host)) || policy.allow.some((a) => a.toLowerCase() === host || a.toLowerCase() === hostPort);
}
