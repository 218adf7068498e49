#!/usr/bin/env bash
# A/B of two Petrel builds in one sitting: the scenarios of
# docs/performance.md's ninth sitting, run in alternation (A, B, A, B, ...)
# on a fresh server and data dir each run, all on 127.0.0.1.
#
#   git worktree add /tmp/petrel-a <rev> && (cd /tmp/petrel-a && go build -o /tmp/petrel-A ./cmd/petrel)
#   go build -o /tmp/petrel-B ./cmd/petrel
#   bash scripts/bench-ab.sh /tmp/petrel-A /tmp/petrel-B 3
#
# Environment: COUNT (remoting messages a run, 500000), GCOUNT (gRPC
# messages a run, COUNT), DRAIN (backlog the drain consumes, 1000000),
# GFLUSH (flush mode of the gRPC scenarios, sync), SCENARIOS (any of
# produce-async produce-sync drain grpc-16 grpc-1). Output: one line a run,
# "SCENARIO A|B MSGS_PER_SEC". Ports 19876, 20911 and 18081 must be free.
set -uo pipefail
A=${1:?usage: bench-ab.sh A_BIN B_BIN [RUNS]}; B=${2:?usage: bench-ab.sh A_BIN B_BIN [RUNS]}; RUNS=${3:-3}
COUNT=${COUNT:-500000}; DRAIN=${DRAIN:-1000000}
NS=127.0.0.1:19876; BR=127.0.0.1:20911; GR=127.0.0.1:18081
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
start() { # start BIN FLUSH
  rm -rf "$W/data"; "$1" server --data-dir "$W/data" --flush "$2" --namesrv-listen $NS --broker-listen $BR \
    --grpc-listen $GR --grpc-plaintext --http-listen "" --log-level warn >"$W/server.log" 2>&1 &
  PID=$!
  for i in $(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/20911) 2>/dev/null && (exec 3<>/dev/tcp/127.0.0.1/18081) 2>/dev/null && return 0; sleep 0.1; done
  echo "server did not start" >&2; tail "$W/server.log" >&2
}
stop() { kill -TERM $PID; wait $PID 2>/dev/null; }
bench() { local ns=(--namesrv $NS); case " $* " in *" --grpc "*) ns=();; esac; "$BIN" bench "$@" "${ns[@]}" --progress off 2>&1 | grep -E "^petrel" | sed "s/^/  /"; }
rate() { grep -oE 'msgs/s=[0-9.]+' | head -1 | cut -d= -f2; }
run() { # run LABEL BIN SCENARIO
  BIN=$2
  case $3 in
    produce-async) start $BIN async; r=$(bench produce --size 1024 --concurrency 64 --count $COUNT --serialize rocketmq | rate);;
    produce-sync)  start $BIN sync;  r=$(bench produce --size 1024 --concurrency 64 --count $COUNT --serialize rocketmq | rate);;
    drain)         start $BIN async; bench produce --size 1024 --concurrency 64 --count $DRAIN --serialize rocketmq >/dev/null; r=$(bench consume --count $DRAIN | rate);;
    grpc-16)       start $BIN ${GFLUSH:-sync};  r=$(bench produce --size 1024 --concurrency 64 --count ${GCOUNT:-$COUNT} --grpc $GR --grpc-plaintext --batch 16 | rate);;
    grpc-1)        start $BIN ${GFLUSH:-sync};  r=$(bench produce --size 1024 --concurrency 64 --count ${GCOUNT:-$COUNT} --grpc $GR --grpc-plaintext | rate);;
  esac
  stop
  echo "$3 $1 $r"
}
for s in ${SCENARIOS:-produce-async produce-sync drain grpc-16 grpc-1}; do
  for i in $(seq $RUNS); do run A "$A" $s; run B "$B" $s; done
done
