// Replication policies: validation and expansion into replication task specs. Pure.
//
//   chain   nodes [n0, n1, ..., nk], database d  ->  n0/db/d -> n1/db/d -> ... -> nk/db/d  (k tasks)
//   group   members [m0, ..., mk]                ->  every ordered pair mi -> mj, i != j      (k(k+1) tasks)
//   fanout  source s, targets [t0, ..., tk]      ->  s -> ti                                 (k+1 tasks)
//
// A chain node without `://` stands for this node (the local database `database`). Task ids
// are `<policy>:<index>`, stable for a given policy, so re-enabling never duplicates tasks.
import { FirkinError } from '../../core/errors.js';
import { isDbName } from '../names.js';
import { type EndpointSpec, type RemoteAuth, displayEndpoint, parseAuth, parseEndpoint } from './endpoint-spec.js';
import { type ReplicationFilter, parseFilter } from './filter.js';
import { isPlainObject } from '../../core/values.js';

export const PATTERNS = ['chain', 'group', 'fanout'] as const;
export type Pattern = (typeof PATTERNS)[number];
export const MODES = ['continuous', 'one_shot'] as const;
export type Mode = (typeof MODES)[number];

const POLICY_LIMITS = { endpointsMax: 64, nameChars: 128 } as const;

export interface Policy {
  readonly name: string;
  readonly pattern: Pattern;
  readonly mode: Mode;
  readonly enabled: boolean;
  readonly nodes?: readonly string[];
  readonly database?: string;
  readonly members?: readonly string[];
  readonly source?: string;
  readonly targets?: readonly string[];
  /** Stored server-side, never returned. */
  readonly auth?: unknown;
  readonly filter?: unknown;
}

export interface TaskSpec {
  readonly id: string;
  readonly source: EndpointSpec;
  readonly target: EndpointSpec;
  readonly filter: ReplicationFilter;
  readonly continuous: boolean;
}

const bad = (message: string) => new FirkinError('bad_request', message);
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

export function checkPolicyName(name: unknown): string {
  if (typeof name !== 'string' || name.length > POLICY_LIMITS.nameChars || !NAME.test(name)) {
    throw bad(`policy name must be 1 to ${POLICY_LIMITS.nameChars} characters: a letter or digit, then letters, digits, _ . -`);
  }
  return name;
}

function stringList(raw: unknown, field: string, min: number): string[] {
  if (!Array.isArray(raw) || !raw.every((s) => typeof s === 'string' && s !== '')) throw bad(`${field} must be a list of non-empty strings`);
  if (raw.length < min) throw bad(`${field} needs at least ${min} entries, got ${raw.length}`);
  if (raw.length > POLICY_LIMITS.endpointsMax) throw bad(`${field} may hold at most ${POLICY_LIMITS.endpointsMax} entries`);
  if (new Set(raw).size !== raw.length) throw bad(`${field} lists the same entry twice`);
  return raw as string[];
}

const FIELDS: Record<Pattern, readonly string[]> = { chain: ['nodes', 'database'], group: ['members'], fanout: ['source', 'targets'] };
const COMMON = ['name', 'pattern', 'mode', 'enabled', 'auth', 'filter'];

/** Validate a policy body (400 on anything wrong) and check that it expands. */
export function parsePolicy(raw: unknown, nameFromPath?: string): Policy {
  if (!isPlainObject(raw)) throw bad('a policy must be a JSON object');
  const name = checkPolicyName(raw.name ?? nameFromPath);
  if (nameFromPath !== undefined && name !== nameFromPath) throw bad(`policy name ${JSON.stringify(raw.name)} differs from the path's ${JSON.stringify(nameFromPath)}`);
  const pattern = raw.pattern;
  if (typeof pattern !== 'string' || !(PATTERNS as readonly string[]).includes(pattern)) throw bad(`unknown pattern ${JSON.stringify(pattern)}: use one of ${PATTERNS.join(', ')}`);
  const p = pattern as Pattern;
  for (const key of Object.keys(raw)) {
    if (!COMMON.includes(key) && !FIELDS[p].includes(key)) throw bad(`field ${JSON.stringify(key)} does not belong to a ${p} policy (fields: ${[...COMMON, ...FIELDS[p]].join(', ')})`);
  }
  const mode = raw.mode ?? 'continuous';
  if (typeof mode !== 'string' || !(MODES as readonly string[]).includes(mode)) throw bad(`mode must be one of ${MODES.join(', ')}`);
  if (raw.enabled !== undefined && typeof raw.enabled !== 'boolean') throw bad('enabled must be a boolean');
  parseAuth(raw.auth);
  parseFilter(raw.filter);
  let policy: Policy = { name, pattern: p, mode: mode as Mode, enabled: raw.enabled === true };
  switch (p) {
    case 'chain': {
      const nodes = stringList(raw.nodes, 'chain nodes', 2);
      if (typeof raw.database !== 'string' || !isDbName(raw.database)) throw bad('a chain needs database: a valid database name on every node');
      policy = { ...policy, nodes, database: raw.database };
      break;
    }
    case 'group':
      policy = { ...policy, members: stringList(raw.members, 'group members', 2) };
      break;
    case 'fanout': {
      if (typeof raw.source !== 'string' || raw.source === '') throw bad('a fanout needs source: a local database name or a database URL');
      const targets = stringList(raw.targets, 'fanout targets', 1);
      if (targets.includes(raw.source)) throw bad('a fanout target may not be its source');
      policy = { ...policy, source: raw.source, targets };
      break;
    }
  }
  if (raw.auth !== undefined) policy = { ...policy, auth: raw.auth };
  if (raw.filter !== undefined) policy = { ...policy, filter: raw.filter };
  expandPolicy(policy);
  return policy;
}

function chainEndpoint(node: string, database: string, auth: RemoteAuth, where: string): EndpointSpec {
  if (!node.includes('://')) return { kind: 'local', db: database };
  return parseEndpoint(`${node.replace(/\/+$/, '')}/db/${database}`, auth, where);
}

/** The replication tasks a policy runs, in a stable order. */
export function expandPolicy(policy: Policy): TaskSpec[] {
  const auth = parseAuth(policy.auth);
  const filter = parseFilter(policy.filter);
  const continuous = policy.mode === 'continuous';
  let pairs: [EndpointSpec, EndpointSpec][] = [];
  switch (policy.pattern) {
    case 'chain': {
      const eps = policy.nodes!.map((n, i) => chainEndpoint(n, policy.database!, auth, `nodes[${i}]`));
      for (let i = 0; i + 1 < eps.length; i++) pairs.push([eps[i]!, eps[i + 1]!]);
      break;
    }
    case 'group': {
      const eps = policy.members!.map((m, i) => parseEndpoint(m, auth, `members[${i}]`));
      for (const a of eps) for (const b of eps) if (a !== b) pairs.push([a, b]);
      break;
    }
    case 'fanout': {
      const source = parseEndpoint(policy.source, auth, 'source');
      pairs = policy.targets!.map((t, i) => [source, parseEndpoint(t, auth, `targets[${i}]`)]);
      break;
    }
  }
  for (const [a, b] of pairs) {
    if (displayEndpoint(a) === displayEndpoint(b)) throw bad(`policy ${policy.name} would replicate ${displayEndpoint(a)} to itself`);
  }
  return pairs.map(([source, target], i) => ({ id: `${policy.name}:${i}`, source, target, filter, continuous }));
}

/** The policy as returned by GET: every stored field except `auth`. */
export function publicPolicy(policy: Policy): Record<string, unknown> {
  const { auth, ...rest } = policy;
  return auth === undefined ? rest : { ...rest, has_auth: true };
}
