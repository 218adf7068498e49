#!/usr/bin/env bash
# Petrel next to NATS JetStream, in one sitting on this machine: the peer
# comparison of docs/performance.md.
#
#   bash scripts/bench-vs-nats.sh            # 500k messages a run, 3 runs each
#   COUNT=100000 RUNS=1 bash scripts/bench-vs-nats.sh   # a quick look
#
# What it runs, all on 127.0.0.1 with data in a temporary folder:
#   1. nats-server v2.15.2 with JetStream (file store), loaded by natscli's
#      `nats bench`: async publish (NATS's default fsync every 2 minutes),
#      a durable pull consumer with explicit acks, and async publish with
#      `sync_interval: always` (fsync per message).
#   2. `petrel server` built from this tree, a fresh data dir per run, loaded
#      by `petrel bench`: produce with --flush async and --flush sync, then
#      a drain of the backlog. 1 KiB bodies, 64 in flight, ROCKETMQ headers.
# Every server is stopped by its PID. Output: one line per run in the
# format of `petrel bench` (nats lines start with "nats").
#
# Prerequisites: Go (the NATS binaries are built with `go install` into
# $PEERS_BIN, default ~/.cache/petrel-peers/bin, the first time).
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT="${COUNT:-500000}"
RUNS="${RUNS:-3}"
SIZE="${SIZE:-1024}"
INFLIGHT="${INFLIGHT:-64}"
PEERS_BIN="${PEERS_BIN:-$HOME/.cache/petrel-peers/bin}"
WORK="$(mktemp -d)"
PIDS=()

stop() { # stop PID: SIGTERM, then SIGKILL after 20 s
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 200); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do stop "$pid"; done
  rm -rf "$WORK"
}
trap cleanup EXIT

wait_port() { # wait_port PORT PID LOG
  local i
  for i in $(seq 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || { echo "server (pid $2) exited; its log:" >&2; tail -20 "$3" >&2; return 1; }
    sleep 0.1
  done
  echo "port $1 did not open" >&2
  return 1
}

mkdir -p "$PEERS_BIN"
[ -x "$PEERS_BIN/nats-server" ] || GOBIN="$PEERS_BIN" go install github.com/nats-io/nats-server/v2@v2.15.2
[ -x "$PEERS_BIN/nats" ] || GOBIN="$PEERS_BIN" go install github.com/nats-io/natscli/nats@v0.5.0
go build -buildvcs=true -o "$WORK/petrel" ./cmd/petrel
echo "# $(date -u +%FT%TZ) $(nproc) cores; $("$PEERS_BIN/nats-server" --version); $("$WORK/petrel" --version)"

# ---- NATS JetStream -------------------------------------------------------
NATS_PORT=14222
run_nats() { # run_nats NAME SYNC_LINE
  local conf="$WORK/nats-$1.conf"
  rm -rf "$WORK/nats-store"
  cat >"$conf" <<CONF
listen: 127.0.0.1:$NATS_PORT
jetstream {
  store_dir: "$WORK/nats-store"
  max_file_store: 40GB
  $2
}
CONF
  "$PEERS_BIN/nats-server" -c "$conf" >"$WORK/nats-$1.log" 2>&1 &
  NATS_PID=$!
  PIDS+=("$NATS_PID")
  wait_port "$NATS_PORT" "$NATS_PID" "$WORK/nats-$1.log"
}
nats_cli() { XDG_CONFIG_HOME="$WORK/xdg" HOME="$WORK/xdg" "$PEERS_BIN/nats" -s "nats://127.0.0.1:$NATS_PORT" --no-context "$@"; }
nats_rate() { # the msgs/sec of `nats bench`'s stats line
  grep -m1 ' stats: ' | sed -E 's/.* stats: ([0-9,]+) msgs\/sec.*/\1/' | tr -d ,
}
mkdir -p "$WORK/xdg"
for run in $(seq "$RUNS"); do
  run_nats default "# sync_interval: default (2m)"
  r=$(nats_cli bench js pub async bench.data --stream BENCH --create --storage file --purge --msgs "$COUNT" --size "$SIZE" --no-progress 2>&1 | nats_rate)
  echo "nats js-async-pub-file ${SIZE}B msgs=$COUNT msgs/s=$r run=$run"
  nats_cli consumer add BENCH drain --pull --deliver all --ack explicit --max-pending 10000 --defaults >/dev/null
  r=$(nats_cli bench js consume --stream BENCH --consumer drain --msgs "$COUNT" --size "$SIZE" --no-progress 2>&1 | nats_rate)
  echo "nats js-consume-file ${SIZE}B msgs=$COUNT msgs/s=$r run=$run"
  stop "$NATS_PID"
  run_nats always "sync_interval: always"
  n=$((COUNT / 10))
  r=$(nats_cli bench js pub async bench.data --stream BENCH --create --storage file --purge --msgs "$n" --size "$SIZE" --no-progress 2>&1 | nats_rate)
  echo "nats js-async-pub-file-syncalways ${SIZE}B msgs=$n msgs/s=$r run=$run"
  stop "$NATS_PID"
done

# ---- Petrel ---------------------------------------------------------------
run_petrel() { # run_petrel FLUSH
  rm -rf "$WORK/petrel-data"
  "$WORK/petrel" server --data-dir "$WORK/petrel-data" --flush "$1" \
    --namesrv-listen 127.0.0.1:19876 --broker-listen 127.0.0.1:19911 \
    --http-listen 127.0.0.1:19080 --grpc-listen off >"$WORK/petrel-$1.log" 2>&1 &
  PETREL_PID=$!
  PIDS+=("$PETREL_PID")
  wait_port 19911 "$PETREL_PID" "$WORK/petrel-$1.log"
}
for run in $(seq "$RUNS"); do
  for flush in async sync; do
    run_petrel "$flush"
    "$WORK/petrel" bench produce --namesrv 127.0.0.1:19876 --size "$SIZE" --count "$COUNT" \
      --concurrency "$INFLIGHT" --serialize rocketmq --scenario "produce-$flush" --progress off
    "$WORK/petrel" bench consume --namesrv 127.0.0.1:19876 --count "$COUNT" --scenario "drain-$flush" --progress off
    stop "$PETREL_PID"
  done
done
