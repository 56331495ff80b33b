// Our metrics as usearch's kinds: one table for its graph index (`usearch.ts`) and its exact
// search (`flat.ts`). Both give distances in the same convention (metric.ts turns them into scores).
import usearch from 'usearch';
import type { Metric } from '../collection-config.js';

export const USEARCH_METRIC: Record<Metric, (typeof usearch.MetricKind)[keyof typeof usearch.MetricKind]> = {
  cosine: usearch.MetricKind.Cos,
  l2: usearch.MetricKind.L2sq,
  ip: usearch.MetricKind.IP,
};
