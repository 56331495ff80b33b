// Raft data types shared by the pure core, the storage and the transport.
// Indexes and terms are plain numbers (safe integers); index 0 / term 0 is "before the log".

export type NodeId = string;
export type GroupId = string;

export const CONF_CHANGE_TYPES = ['addVoter', 'addLearner', 'removeNode'] as const;
export type ConfChangeType = (typeof CONF_CHANGE_TYPES)[number];
/** One-at-a-time membership change. `addVoter` on a learner promotes it. */
export interface ConfChange {
  readonly type: ConfChangeType;
  readonly node: NodeId;
}

export interface ConfState {
  readonly voters: readonly NodeId[];
  readonly learners: readonly NodeId[];
}

export type EntryPayload =
  | { readonly kind: 'noop' } // appended by every new leader so it can commit entries of its term
  | { readonly kind: 'normal'; readonly data: Uint8Array }
  | { readonly kind: 'conf'; readonly change: ConfChange }
  // A leader vouches for `node`'s replica that opened empty as `incarnation` (`RaftCore.catchingUp`):
  // committed by a quorum that did not count that replica, it holds every entry committed before.
  | { readonly kind: 'vouch'; readonly node: NodeId; readonly incarnation: string };

export type Entry = { readonly index: number; readonly term: number } & EntryPayload;

export interface HardState {
  readonly term: number;
  readonly vote: NodeId | null;
  readonly commit: number;
}

export interface SnapshotMeta {
  readonly index: number;
  readonly term: number;
  /** Membership after applying every entry up to `index`. */
  readonly conf: ConfState;
}

export interface Snapshot {
  readonly meta: SnapshotMeta;
  readonly data: Uint8Array;
}

interface MsgBase {
  readonly group: GroupId;
  readonly from: NodeId;
  readonly to: NodeId;
  readonly term: number;
}

export type Message = MsgBase &
  (
    // commit/commitTerm (also on their answers): the sender's commit index and that entry's term;
    // a receiver holding the same entry there commits up to it (log matching), e.g. a
    // membership change it had not seen committed
    | { readonly kind: 'preVote' | 'vote'; readonly lastIndex: number; readonly lastTerm: number; readonly force: boolean; readonly commit?: number; readonly commitTerm?: number }
    | { readonly kind: 'preVoteResp' | 'voteResp'; readonly reject: boolean; readonly commit?: number; readonly commitTerm?: number }
    | {
        readonly kind: 'append';
        readonly prevIndex: number;
        readonly prevTerm: number;
        readonly entries: readonly Entry[];
        readonly commit: number;
      }
    // index: the follower's last matching index (accept) or the rejected prevIndex (reject)
    // fresh (also on heartbeatResp): the replica's incarnation while it is not vouched for; its
    // acknowledgements count for no quorum then (`RaftCore.catchingUp`)
    | { readonly kind: 'appendResp'; readonly index: number; readonly reject: boolean; readonly rejectHint: number; readonly fresh?: string }
    // quiesce: the leader's last heartbeat before an idle group goes silent (RaftOptions.quiesceAfterTicks)
    | { readonly kind: 'heartbeat'; readonly commit: number; readonly readSeq: number; readonly quiesce?: true }
    // wake: a follower that left quiescence asks a silent leader to resume heartbeats
    | { readonly kind: 'heartbeatResp'; readonly readSeq: number; readonly wake?: true; readonly fresh?: string }
    // vouch: the fresh incarnation of the receiver that a committed vouch entry the snapshot covers names
    | { readonly kind: 'snapshot'; readonly snapshot: Snapshot; readonly vouch?: string }
    | { readonly kind: 'timeoutNow' }
    | { readonly kind: 'readIndex'; readonly ctx: string }
    | { readonly kind: 'readIndexResp'; readonly ctx: string; readonly index: number; readonly reject: boolean }
  );

export const ROLES = ['follower', 'preCandidate', 'candidate', 'leader'] as const;
export type Role = (typeof ROLES)[number];

export interface SoftState {
  readonly role: Role;
  readonly leader: NodeId | null;
  readonly term: number;
}

/** A linearizable read may be served once the local applied index reaches `index`. */
export interface ReadState {
  readonly ctx: string;
  readonly index: number;
}

/**
 * What the core wants done. Contract (written once, in the driver):
 * 0. `earlyMessages` may be sent at once, before or while step 1 runs (a leader's appends:
 *    one round trip overlaps its own fsync);
 * 1. persist `snapshot`, `entries` and `hardState` atomically, fsynced when `mustSync`;
 * 2. only then send `messages`;
 * 3. restore `snapshot` into the state machine (if any), then apply `committed` in order;
 * 4. call `advance(rd)`: only then does a leader count its own entries toward the commit.
 *    At most one Ready is outstanding.
 */
export interface Ready {
  readonly softState: SoftState;
  readonly hardState: HardState | undefined;
  readonly entries: readonly Entry[];
  readonly snapshot: Snapshot | undefined;
  /** Safe to send before this Ready is persisted. */
  readonly earlyMessages: readonly Message[];
  /** To send only after this Ready is persisted. */
  readonly messages: readonly Message[];
  readonly committed: readonly Entry[];
  readonly readStates: readonly ReadState[];
  readonly mustSync: boolean;
}
