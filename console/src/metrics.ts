// Request rate and mean latency from two scrapes of /metrics (Prometheus text): the HTTP
// counters only ever grow, so the difference between samples is the traffic in between.
export interface HttpTotals {
  atMs: number;
  requests: number;
  durationSecondsSum: number;
}

export function parseHttpTotals(text: string, atMs: number): HttpTotals {
  let requests = 0;
  let durationSecondsSum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('firkin_http_requests_total')) requests += Number(line.slice(line.lastIndexOf(' ') + 1));
    else if (line.startsWith('firkin_http_request_duration_seconds_sum')) durationSecondsSum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return { atMs, requests, durationSecondsSum };
}

export interface RatePoint {
  atS: number;
  requestsPerS: number;
  meanLatencyMs: number;
}

export function ratePoint(prev: HttpTotals, next: HttpTotals): RatePoint {
  const requests = next.requests - prev.requests;
  const seconds = (next.atMs - prev.atMs) / 1000;
  return {
    atS: next.atMs / 1000,
    requestsPerS: seconds > 0 ? requests / seconds : 0,
    meanLatencyMs: requests > 0 ? ((next.durationSecondsSum - prev.durationSecondsSum) / requests) * 1000 : 0,
  };
}
