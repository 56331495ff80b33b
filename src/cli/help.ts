// The --help texts of `firkin`, one per command (docs/cli.md shows the same with examples).
export type HelpTopic = 'firkin' | 'cluster' | 'status' | 'nodes' | 'health' | 'join' | 'leave' | 'remove' | 'shards' | 'jobs' | 'reshard' | 'vdb' | 'vdb-split' | 'vdb-merge' | 'vdb-cancel' | 'vdb-cancel-import' | 'vdb-shards' | 'tasks' | 'recover';

const TARGET = `Options:
  --url URL    the node to talk to (env FIRKIN_URL; default http://127.0.0.1:8080)
  --key KEY    an admin API key, sent as Authorization: Bearer (env FIRKIN_KEY)
  --json       print the node's JSON answer instead of a table
  -h, --help   this text
Env FIRKIN_NODES (comma-separated URLs): a cluster-wide command whose node refuses the
connection asks the next of them.`;

const EXIT = `Exit status: 0 done, 1 the node answered with an error or could not be reached,
2 usage error, 3 (cluster health) a member is not ok. Errors are one line on stderr:
firkin: <code>: <message>.`;

export const HELP: Record<HelpTopic, string> = {
  firkin: `Usage: firkin <cluster|collection|vdb|tasks> <command> [options]

Administer a Firkin node or cluster over its HTTP API.

Commands:
  cluster status              this node's view of the cluster
  cluster nodes               the members (details with an admin key)
  cluster health              every member's /health: status and problems
  cluster join --seed H:P     join the cluster that H:P (a member's gRPC address) belongs to
  cluster leave               make this node leave its cluster
  cluster remove NODE         remove a dead node from the cluster (--force: even where a
                              shard group may need its disk for a majority)
  cluster shards COLLECTION   a replicated collection's shards: replicas, leader, lag
  cluster jobs                the cluster's jobs (leave, repair, reshard, VDB split and merge)
  collection reshard C N      reshard collection C to N shards online (--wait: show progress)
  collection reshard C --cancel
                              cancel the reshard of C (before its switch)
  vdb shards VDB              a VDB's shards: hash range, replicas, primary, status, lag
  vdb split VDB SHARD         split a clustered VDB's shard in two, following its progress
  vdb merge VDB SHARD --into T
                              merge a VDB shard into the adjacent shard T
  vdb cancel VDB              cancel the split or merge running on VDB (before its switch)
  vdb cancel-import VDB       cancel the imports into VDB (on a cluster: on every member)
  tasks                       what the node works on now (replications, compactions, the
                              cluster's jobs) with progress: CouchDB's _active_tasks
  recover list|force          offline, on a stopped node's data directory: its Raft groups,
                              and forcing a survivor to be its group's only voter (firkin
                              recover --help)

${TARGET}

${EXIT}
Run firkin <cluster|collection|vdb> <command> --help for one command.`,

  cluster: `Usage: firkin cluster <status|nodes|health|join|leave|remove|shards|jobs> [options]

${TARGET}

Run firkin cluster <command> --help for one command.`,

  status: `Usage: firkin cluster status [--url URL] [--key KEY] [--json]

Shows the node's cluster state (standalone, joining, member or left), the metadata leader, the
members and which of them are healthy. Calls GET /vectordb/cluster/status.

${TARGET}`,

  nodes: `Usage: firkin cluster nodes [--url URL] [--key KEY] [--json]

With an admin key: every node with its status, role in the metadata group, zone, HTTP and
gRPC addresses and last heartbeat (GET /_cluster/nodes); a standalone node, which has no
such view, lists its name. Without a key: the member names (GET /vectordb/cluster/nodes).

${TARGET}`,

  health: `Usage: firkin cluster health [--url URL] [--key KEY] [--json]

Asks every member of the cluster for its GET /health (the members and their HTTP addresses
come from GET /_cluster/nodes with an admin key, else the node at --url only) and prints one
row per node: its health (ok, degraded, failing or unreachable), its membership status and
its problems. Exits 0 when every node answered ok, 3 when one did not (degraded, failing or
unreachable), 1 when the command itself failed.

${TARGET}`,

  join: `Usage: firkin cluster join --seed HOST:PORT --key KEY [--url URL] [--json]

Asks the node at --url to join the cluster through the seed HOST:PORT (the gRPC address of
any member). Needs the admin key. Calls POST /_cluster/join.

${TARGET}`,

  leave: `Usage: firkin cluster leave [--url URL] [--key KEY] [--json]

Makes the node at --url leave its cluster: it hands over leadership, leaves the voter set
and is marked left. Calls POST /vectordb/cluster/leave.

${TARGET}`,

  remove: `Usage: firkin cluster remove NODE --key KEY [--force] [--url URL] [--json]

Removes NODE, a node that is down and will not come back, from the cluster. Any member can
take the request. Needs the admin key. Calls DELETE /_cluster/nodes/NODE. Refused (409) while
a shard group that counts NODE among its voters has no leader, or no caught-up majority
without it: NODE's disk may hold what that majority needs. Start NODE again if its disk
survives; --force removes it anyway.

${TARGET}`,

  shards: `Usage: firkin cluster shards COLLECTION --key KEY [--url URL] [--json]

Shows each shard of a replicated collection as its leader sees it: the replicas it should
have, the leader and term, and how many log entries each member is behind (a replica being
added shows as a learner until it catches up). Needs the admin key. Calls
GET /_cluster/collections/COLLECTION/shards.

${TARGET}`,

  jobs: `Usage: firkin cluster jobs --key KEY [--url URL] [--json]

Lists the cluster's jobs, running and ended, as the metadata group records them: node
leaves, replica repairs, collection reshards and VDB splits and merges, each with its step,
its progress and its last error. Needs the admin key. Calls GET /_cluster/jobs.

${TARGET}`,

  reshard: `Usage: firkin collection reshard COLLECTION N [--wait] [--url URL] [--json]
       firkin collection reshard COLLECTION --cancel [--url URL] [--json]

Reshards a replicated collection to N shards while it keeps serving reads and writes (POST
/vectordb/collections/COLLECTION/reshard). The cluster's metadata leader runs the job: copy,
catch up, switch, clean. With --wait, follows GET .../reshard and shows a progress bar on
stderr until the job ends; exits 1 if it failed or was cancelled.

With --cancel, cancels the running reshard before its switch (DELETE .../reshard): the new
shards go, the old ones stayed authoritative throughout.

${TARGET}`,

  vdb: `Usage: firkin vdb <shards|split|merge|cancel|cancel-import> VDB ... [options]

  vdb shards VDB                 each shard: hash range, replicas, primary, status, lag
  vdb split VDB SHARD            split shard SHARD of a clustered VDB in two
  vdb merge VDB SHARD --into T   merge shard SHARD into the adjacent shard T
  vdb cancel VDB                 cancel the split or merge running on VDB
  vdb cancel-import VDB          cancel the imports into VDB (on a cluster: on every member)

${TARGET}

Run firkin vdb <command> --help for one command.`,

  'vdb-shards': `Usage: firkin vdb shards VDB [--key KEY] [--url URL] [--json]

Each shard of virtual database VDB (GET /vdb/VDB/_shards): its hash range, the nodes holding
a replica, its primary (the shard's Raft leader now; - while it has none) and status (active,
readonly, splitting, merging, unavailable), and per replica how many log entries it is
behind the primary (down: its node is down, whatever it was behind). Standalone, every shard
is a database on the node. Needs a key that may read VDB.

${TARGET}`,

  'vdb-split': `Usage: firkin vdb split VDB SHARD --key KEY [--url URL] [--json]

Splits shard SHARD of a virtual database: a new shard takes the upper half of its hash range,
and the documents there move to it while both keep serving (POST
/vdb/VDB/_shards/SHARD/_split). In a cluster this runs as a job of the metadata leader; the
command shows its progress on stderr (from GET /_cluster/jobs) and prints the result once it
is done. Interrupting the command does not stop the job: firkin vdb cancel VDB does. Needs
the admin key.

${TARGET}`,

  'vdb-merge': `Usage: firkin vdb merge VDB SHARD --into TARGET --key KEY [--url URL] [--json]

Merges shard SHARD of a virtual database into TARGET, the shard next to it in hash space: its
documents move there and SHARD retires (POST /vdb/VDB/_shards/SHARD/_merge). Progress and
result as for vdb split. Needs the admin key.

${TARGET}`,

  'vdb-cancel': `Usage: firkin vdb cancel VDB --key KEY [--url URL] [--json]

Cancels the split or merge running on VDB, before its switching step (DELETE
/vdb/VDB/_rebalance): the copy stops, a merge's copies are removed from its target, and the
shards stay as they were. Prints the job as it ended. Needs the admin key.

${TARGET}`,

  'vdb-cancel-import': `Usage: firkin vdb cancel-import VDB [--key KEY] [--url URL] [--json]

Cancels the imports into virtual database VDB (POST /vdb/VDB/_import): on a cluster wherever
they run (each runs on the node that took it, which firkin tasks names; the node at --url
passes the cancel on to every member), standalone on the node at --url (DELETE
/vdb/VDB/_import). Each stops before its next document and answers its client "cancelled"
with its counts; the batches it wrote stay. Needs a key that may write VDB.

${TARGET}`,

  tasks: `Usage: firkin tasks [options]

What the node works on now, from GET /_active_tasks (CouchDB's list; needs the admin key):
active replications with the documents read and written, database compactions and VDB
imports with their progress, and on a cluster its running jobs (reshards, VDB splits and
merges, repairs, leaves), one row each, the most recently updated first.

${TARGET}

${EXIT}`,
  recover: `Usage: firkin recover list --data-dir DIR
       firkin recover force --data-dir DIR --node NAME (--group GROUP ... | --all)

Offline, with the node stopped (its data directory is locked while it runs). For a group
that lost the disks of a majority of its voters for good: Raft waits for ever there, since
nothing tells a lost voter from a slow one.

  list    every Raft group stored in DIR: voters, learners, term, commit, last index and
          term. Run it on every survivor; recover the one with the highest last term, then
          last index: an entry only the lost voters held is gone.
  force   make NAME (the node's SERVICE_NODE_NAME) the only voter of each GROUP (or of every
          group stored in DIR where it votes): one removeNode entry per other voter at a new
          term, and everything it holds committed. Started again, it elects itself; remove
          the lost nodes (firkin cluster remove NODE) and repair places replicas again.
          Unsafe where another voter is alive: its acknowledged writes may be lost, or two
          leaders may serve one group. Each group on one survivor only: --all is for a
          node that is the only survivor; with several, force each group with --group on
          the survivor holding its newest log.

Exit status: 0 done, 1 a group refused or the directory could not be opened, 2 usage error.`,
};
