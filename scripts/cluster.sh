#!/usr/bin/env bash
# A Firkin cluster on one machine: nodes n1..nN on 127.0.0.1, one directory per node, each
# process stopped by its own PID. `scripts/cluster.sh help` lists the commands; docs/cli.md
# has examples. test/support/cluster.ts drives this same script, so the tests run nodes with
# exactly the environment a user gets (node_env below is the one place it is built).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${FIRKIN_CLUSTER_DIR:-./data/cluster}
DIR=${DIR#./}
case $DIR in /*) ;; *) DIR=$PWD/$DIR ;; esac
DIR=${DIR%/}
NODE_CMD=${FIRKIN_NODE_CMD:-node --max-semi-space-size=32 --import tsx src/main.ts}  # flags: src/core/node-flags.ts
WAIT_S=${FIRKIN_WAIT_S:-60}          # up/start/restart wait this long for members; 0: do not wait
STOP_S=${FIRKIN_STOP_TIMEOUT_S:-10}  # stop/down: SIGTERM, then SIGKILL after this long
NODES_MAX=50

die() { echo "cluster.sh: $*" >&2; exit 1; }
usage() { echo "cluster.sh: $* (see scripts/cluster.sh help)" >&2; exit 2; }

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
for knob in WAIT_S STOP_S; do is_uint "${!knob}" || usage "FIRKIN_${knob/STOP_S/STOP_TIMEOUT_S} must be a whole number of seconds, got '${!knob}'"; done

HELP="Usage: scripts/cluster.sh COMMAND [NODE]

  up N          start n1..nN (stopped ones restart; empty ones join them), wait until all are members
  down          stop every node (SIGTERM, SIGKILL after FIRKIN_STOP_TIMEOUT_S), keep the data
  wipe          down, then delete the cluster directory
  status        one line per node: name, pid, process, HTTP URL, cluster state
  env           FIRKIN_NODES=<HTTP URLs>, FIRKIN_KEY=<admin key>, FIRKIN_URL=<n1's URL>
  start NODE    start a stopped node and wait until it is a member
  stop NODE     SIGTERM (SIGKILL after FIRKIN_STOP_TIMEOUT_S)
  restart NODE  stop, then start
  kill NODE     SIGKILL
  pause NODE    SIGSTOP          resume NODE   SIGCONT
  logs NODE [-f]  the node's log (pino JSON lines), last 100 lines or followed

NODE is n3 or 3. Settings (environment):
  FIRKIN_CLUSTER_DIR  ./data/cluster     FIRKIN_HTTP_BASE  8081 (n1; nI uses base+I-1)
  FIRKIN_GRPC_BASE    9081               FIRKIN_ZONES      zones given to n1, n2, ... in turn
  FIRKIN_WAIT_S       60 (0: no wait)    FIRKIN_STOP_TIMEOUT_S  10
  FIRKIN_NODE_CMD     node --max-semi-space-size=32 --import tsx src/main.ts (run from the repository root)
Any other SERVICE_* setting in the environment reaches every node (the gateway, with
SERVICE_GATEWAY_ENABLED, on each node's own HTTP port)."

# --- the directory: ports, secrets, nodes -------------------------------------------------

# The ports are fixed when the directory is made: a later call without FIRKIN_HTTP_BASE
# must still find the nodes.
load_ports() {
  local HTTP=${FIRKIN_HTTP_BASE:-} GRPC=${FIRKIN_GRPC_BASE:-} v
  for v in HTTP GRPC; do
    local value=${!v}
    [[ -z $value ]] || { is_uint "$value" && ((value >= 1 && value <= 65535)); } || usage "FIRKIN_${v}_BASE must be a port from 1 to 65535, got '$value'"
  done
  if [[ -f $DIR/ports ]]; then
    read -r HTTP_BASE GRPC_BASE <"$DIR/ports"
    [[ -z $HTTP || $HTTP == "$HTTP_BASE" ]] || die "FIRKIN_HTTP_BASE=$HTTP, but the cluster in $DIR uses $HTTP_BASE"
    [[ -z $GRPC || $GRPC == "$GRPC_BASE" ]] || die "FIRKIN_GRPC_BASE=$GRPC, but the cluster in $DIR uses $GRPC_BASE"
  else
    HTTP_BASE=${HTTP:-8081}
    GRPC_BASE=${GRPC:-9081}
  fi
}

# A secret made once, random, readable by the owner only.
make_secret() {
  local file=$1 prefix=$2
  [[ -s $file ]] && return
  (umask 077 && printf '%s%s\n' "$prefix" "$(head -c 32 /dev/urandom | od -An -vtx1 | tr -d ' \n')" >"$file.tmp.$$" && mv "$file.tmp.$$" "$file")
  chmod 600 "$file"
}

init_dir() {
  mkdir -p "$DIR"
  [[ -f $DIR/ports ]] || echo "$HTTP_BASE $GRPC_BASE" >"$DIR/ports"
  make_secret "$DIR/cookie" ''
  make_secret "$DIR/admin.key" 'fk_'
}

need_cluster() { [[ -f $DIR/ports ]] || die "no cluster in $DIR (start one with: scripts/cluster.sh up N)"; }

# Node numbers that have a directory, ascending.
node_ids() {
  local d
  for d in "$DIR"/n*; do
    if [[ -d $d && ${d##*/n} =~ ^[0-9]+$ ]]; then echo "${d##*/n}"; fi
  done | sort -n
}

node_count() { node_ids | tail -n 1; }

# n3 or 3 -> 3, for a node `up` has started.
node_arg() {
  [[ $# -ge 1 && -n $1 ]] || usage "missing NODE"
  local i=${1#n}
  [[ $i =~ ^[1-9][0-9]*$ ]] || usage "NODE must be like n3 or 3, got '$1'"
  [[ -d $DIR/n$i ]] || die "no node n$i in $DIR (up started n1..n$(node_count))"
  echo "$i"
}

http_port() { echo $((HTTP_BASE + $1 - 1)); }
grpc_port() { echo $((GRPC_BASE + $1 - 1)); }
url_of() { echo "http://127.0.0.1:$(http_port "$1")"; }

# --- processes ----------------------------------------------------------------------------

# The PID in nI/pid if that process is still this node. A PID is reused after a process dies,
# so where /proc exists the process must carry this node's marker in its environment; a zombie
# (empty environment) is dead.
pid_of() {
  local i=$1 pid envs
  [[ -f $DIR/n$i/pid ]] || return 0
  pid=$(<"$DIR/n$i/pid")
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 0
  if [[ -d /proc/$pid ]]; then
    envs=$(tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ") || return 0
    grep -qxF "FIRKIN_CLUSTER_NODE=$DIR/n$i" <<<"$envs" || return 0
  fi
  echo "$pid"
}

# One letter (R, S, T stopped, Z zombie...) or empty without /proc. The name in field 2 may
# hold spaces, so read after its closing parenthesis.
proc_state() { sed 's/.*) //; s/ .*//' "/proc/$1/stat" 2>/dev/null || true; }

# The one place a node's environment is made (the tests run nodes through this script too).
node_env() {
  local i=$1 seeds=$2 zones=()
  export FIRKIN_CLUSTER_NODE=$DIR/n$i
  export SERVICE_ENABLE_CLUSTER=true
  export SERVICE_NODE_NAME=n$i
  export SERVICE_HTTP_IP=127.0.0.1
  export SERVICE_HTTP_PORT; SERVICE_HTTP_PORT=$(http_port "$i")
  # The gateway (SERVICE_GATEWAY_ENABLED) joins each node's own port: one fixed port for every node would clash.
  export SERVICE_GATEWAY_PORT=$SERVICE_HTTP_PORT
  export SERVICE_GRPC_IP=127.0.0.1
  export SERVICE_GRPC_PORT; SERVICE_GRPC_PORT=$(grpc_port "$i")
  export SERVICE_GRPC_ADVERTISE=127.0.0.1:$SERVICE_GRPC_PORT
  export RELEASE_COOKIE; RELEASE_COOKIE=$(<"$DIR/cookie")
  export SERVICE_ADMIN_KEY; SERVICE_ADMIN_KEY=$(<"$DIR/admin.key")
  export SERVICE_DATA_DIR=$DIR/n$i/data
  if [[ -n $seeds ]]; then export SERVICE_SEED_NODES=$seeds; else unset SERVICE_SEED_NODES; fi
  if [[ -n ${FIRKIN_ZONES:-} ]]; then
    IFS=, read -r -a zones <<<"$FIRKIN_ZONES"
    export SERVICE_ZONE=${zones[$(((i - 1) % ${#zones[@]}))]}
  fi
}

# Seeds for a node with no data yet: n1 first when it has data (it bootstrapped, or joined
# since), then the nodes that were running before this batch. A node with data ignores seeds
# (it knows its cluster); a node with none and no seeds bootstraps a new cluster.
seeds_for() {
  local i=$1 j seeds=()
  shift
  if [[ $i != 1 ]] && has_data 1; then seeds+=("127.0.0.1:$(grpc_port 1)"); fi
  for j in "$@"; do
    if [[ $j != 1 && $j != "$i" ]]; then seeds+=("127.0.0.1:$(grpc_port "$j")"); fi
  done
  (IFS=,; echo "${seeds[*]}")
}

# The nodes other than $1 that have data: while there is one, the cluster exists and a node
# with empty data must join it, never bootstrap another (n1 emptied and started again).
others_with_data() {
  local j
  for j in $(node_ids); do
    if [[ $j != "$1" ]] && has_data "$j"; then echo "$j"; fi
  done
}

# The end of a node's log, for an error line.
last_log_line() {
  local line
  line=$(tail -n 1 "$DIR/n$1/log" 2>/dev/null | cut -c1-300)
  echo "${line:-(the log is empty)}"
}

has_data() { [[ -n $(ls -A "$DIR/n$1/data" 2>/dev/null) ]]; }

launch() {
  local i=$1 seeds=$2 d
  d=$DIR/n$i
  mkdir -p "$d/data"
  (
    cd "$ROOT"
    node_env "$i" "$seeds"
    trap '' HUP # outlive the terminal that ran `up`
    exec </dev/null >>"$d/log" 2>&1
    eval "exec $NODE_CMD"
  ) &
  local pid=$! tries=0
  echo "$pid" >"$d/pid"
  # Until the subshell has exec'd the node, its environment lacks the marker pid_of checks.
  while [[ -z $(pid_of "$i") ]]; do
    kill -0 "$pid" 2>/dev/null && ((tries++ < 100)) || die "n$i did not start; last log line: $(last_log_line "$i")"
    sleep 0.05
  done
  echo "started n$i (pid $pid) $(url_of "$i")${seeds:+ seeds $seeds}"
}

# The node's cluster state from GET /vectordb/cluster/status, or empty.
cluster_state() {
  local body
  # The header comes on stdin: a key in curl's arguments would show in every `ps`.
  body=$(printf 'authorization: Bearer %s\n' "$(<"$DIR/admin.key")" | curl -fsS --max-time "${2:-2}" -H @- "$(url_of "$1")/vectordb/cluster/status" 2>/dev/null) || return 0
  sed -n 's/.*"state":"\([a-z_]*\)".*/\1/p' <<<"$body"
}

# Wait (bounded by FIRKIN_WAIT_S) until every given node is a member; a node that exits
# meanwhile fails at once, naming its log.
wait_members() {
  (( WAIT_S == 0 )) && return 0
  local deadline=$((SECONDS + WAIT_S)) pending=("$@") left i state
  while ((${#pending[@]} > 0)); do
    left=()
    for i in "${pending[@]}"; do
      [[ -n $(pid_of "$i") ]] || die "n$i exited while starting; last log line: $(last_log_line "$i") (log: $DIR/n$i/log)"
      state=$(cluster_state "$i")
      # A node that left, or was removed while down, never becomes a member with its old data.
      [[ $state == left ]] && die "n$i is out of its cluster (it left, or was removed while down) and cannot join again with its old data: stop it, delete $DIR/n$i/data and start it to join as a new node"
      [[ $state == member ]] || left+=("$i")
    done
    pending=("${left[@]+"${left[@]}"}")
    ((${#pending[@]} == 0)) && break
    ((SECONDS < deadline)) || die "timed out after ${WAIT_S}s waiting for $(printf 'n%s ' "${pending[@]}")to be members (logs: $(printf "$DIR/n%s/log " "${pending[@]}"))"
    sleep 0.2
  done
  return 0
}

# Wait until none of the PIDs is alive, up to $1 seconds; prints the survivors.
wait_gone() {
  local bound=$1 deadline pid alive
  shift
  deadline=$((SECONDS + bound))
  while :; do
    alive=()
    for pid in "$@"; do
      if kill -0 "$pid" 2>/dev/null && [[ $(proc_state "$pid") != Z ]]; then alive+=("$pid"); fi
    done
    ((${#alive[@]} == 0 || SECONDS >= deadline)) && break
    sleep 0.1
  done
  echo "${alive[@]+"${alive[@]}"}"
}

# SIGTERM (and SIGCONT, so a paused node can act on it), then SIGKILL whatever is left.
stop_nodes() {
  local i pid pids=() ids=() left
  for i in "$@"; do
    pid=$(pid_of "$i")
    if [[ -z $pid ]]; then rm -f "$DIR/n$i/pid"; continue; fi
    kill -TERM "$pid" 2>/dev/null || true
    kill -CONT "$pid" 2>/dev/null || true
    pids+=("$pid")
    ids+=("$i")
  done
  ((${#pids[@]} == 0)) && return 0
  left=$(wait_gone "$STOP_S" "${pids[@]}")
  if [[ -n $left ]]; then
    echo "SIGKILL after ${STOP_S}s: pid $left"
    # shellcheck disable=SC2086
    kill -KILL $left 2>/dev/null || true
    left=$(wait_gone 10 $left)
    [[ -z $left ]] || die "pid $left did not die after SIGKILL"
  fi
  for i in "${ids[@]}"; do rm -f "$DIR/n$i/pid"; echo "stopped n$i"; done
}

signal_node() {
  local i=$1 sig=$2 pid
  pid=$(pid_of "$i")
  [[ -n $pid ]] || die "n$i is not running"
  kill "-$sig" "$pid"
  echo "$pid"
}

# --- commands -----------------------------------------------------------------------------

cmd_up() {
  [[ $# -eq 1 ]] || usage "up needs the number of nodes"
  [[ $1 =~ ^[1-9][0-9]*$ ]] && (($1 <= NODES_MAX)) || usage "up N: N must be from 1 to $NODES_MAX, got '$1'"
  local n=$1 i running=() batch=()
  ((HTTP_BASE + n - 1 <= 65535 && GRPC_BASE + n - 1 <= 65535)) || usage "up $n: ports beyond 65535 (FIRKIN_HTTP_BASE=$HTTP_BASE FIRKIN_GRPC_BASE=$GRPC_BASE)"
  command -v curl >/dev/null || die "up needs curl (to wait for the nodes)"
  init_dir
  for ((i = 1; i <= n; i++)); do
    if [[ -n $(pid_of "$i") ]]; then running+=("$i"); fi
  done
  # A new cluster: n1 first, alone, until it has bootstrapped; then the rest join through it.
  if [[ -z $(pid_of 1) ]] && ! has_data 1 && [[ -z $(others_with_data 1) ]]; then
    launch 1 ""
    wait_members 1
    running+=(1)
  fi
  for ((i = 1; i <= n; i++)); do
    if [[ -z $(pid_of "$i") ]]; then batch+=("$i"); fi
  done
  # Nodes with data restart first (they are the cluster); the empty ones join through them.
  for i in "${batch[@]+"${batch[@]}"}"; do
    if has_data "$i"; then launch "$i" ""; running+=("$i"); fi
  done
  for i in "${batch[@]+"${batch[@]}"}"; do
    if [[ -z $(pid_of "$i") ]]; then launch "$i" "$(seeds_for "$i" "${running[@]+"${running[@]}"}")"; fi
  done
  wait_members $(seq 1 "$n")
  echo "$n nodes are members; scripts/cluster.sh env prints their URLs and the admin key"
}

cmd_start() {
  local i running=() j
  i=$(node_arg "$@")
  if [[ -n $(pid_of "$i") ]]; then echo "n$i is already running (pid $(pid_of "$i"))"; return; fi
  for j in $(node_ids); do
    if [[ -n $(pid_of "$j") ]]; then running+=("$j"); fi
  done
  if has_data "$i"; then
    launch "$i" ""
  elif ((${#running[@]} == 0)) && [[ -n $(others_with_data "$i") ]]; then
    die "n$i has no data and no node of its cluster is running: it would start a new cluster; start a node with data first ($(printf 'n%s ' $(others_with_data "$i"))), then n$i joins through it"
  else
    launch "$i" "$(seeds_for "$i" "${running[@]+"${running[@]}"}")"
  fi
  wait_members "$i"
}

cmd_status() {
  local i pid proc state
  for i in $(node_ids); do
    pid=$(pid_of "$i")
    if [[ -z $pid ]]; then
      proc=stopped state=-
    elif [[ $(proc_state "$pid") == T ]]; then
      proc=paused state=-
    else
      proc=running state=$(cluster_state "$i" 1)
      state=${state:-no-answer}
    fi
    printf '%-4s  %-7s  %-8s  %-22s  %s\n' "n$i" "${pid:--}" "$proc" "$(url_of "$i")" "$state"
  done
}

cmd_env() {
  local i urls=()
  for i in $(node_ids); do urls+=("$(url_of "$i")"); done
  (IFS=,; echo "FIRKIN_NODES=${urls[*]}")
  echo "FIRKIN_KEY=$(<"$DIR/admin.key")"
  echo "FIRKIN_URL=${urls[0]}"
}

cmd_logs() {
  local i
  i=$(node_arg "${1:-}")
  [[ -f $DIR/n$i/log ]] || die "n$i has no log yet"
  case ${2:-} in
    '') tail -n 100 "$DIR/n$i/log" ;;
    -f) tail -n 100 -f "$DIR/n$i/log" ;;
    *) usage "logs NODE [-f], got '$2'" ;;
  esac
}

[[ $# -ge 1 ]] || usage "missing command"
cmd=$1
shift
case $cmd in
  help | -h | --help) echo "$HELP"; exit 0 ;;
esac
load_ports
case $cmd in
  up) cmd_up "$@" ;;
  down) need_cluster; stop_nodes $(node_ids) ;;
  wipe)
    if [[ -f $DIR/ports ]]; then stop_nodes $(node_ids); fi
    [[ ! -e $DIR || -f $DIR/ports ]] || die "$DIR does not look like a cluster directory (no ports file); not deleting it"
    rm -rf "$DIR"
    echo "wiped $DIR"
    ;;
  status) need_cluster; cmd_status ;;
  env) need_cluster; cmd_env ;;
  start) need_cluster; cmd_start "$@" ;;
  stop) need_cluster; i=$(node_arg "$@"); [[ -n $(pid_of "$i") ]] || echo "n$i is not running"; stop_nodes "$i" ;;
  restart) need_cluster; i=$(node_arg "$@"); stop_nodes "$i"; cmd_start "n$i" ;;
  kill)
    need_cluster; i=$(node_arg "$@")
    pid=$(signal_node "$i" KILL)
    [[ -z $(wait_gone 10 "$pid") ]] || die "n$i (pid $pid) did not die after SIGKILL"
    rm -f "$DIR/n$i/pid"
    echo "killed n$i (pid $pid)"
    ;;
  pause) need_cluster; i=$(node_arg "$@"); pid=$(signal_node "$i" STOP); echo "paused n$i (pid $pid)" ;;
  resume) need_cluster; i=$(node_arg "$@"); pid=$(signal_node "$i" CONT); echo "resumed n$i (pid $pid)" ;;
  logs) need_cluster; cmd_logs "$@" ;;
  *) usage "unknown command '$cmd'" ;;
esac
