#!/usr/bin/env bash
# A/B of two Petrel builds on replicated produce, one sitting: for each
# flush mode, a single broker and a master + 1 slave, builds A and B in
# alternation (A single, A repl, B single, B repl, ...), fresh processes and
# data dirs each run, all on 127.0.0.1. The method of docs/performance.md's
# eleventh sitting:
#
#   namesrv; master `broker --broker-name bg --broker-id 0 --ha-listen ...
#   --flush F --replication F --sync-replicas N` (N 0: single, 1: with a
#   slave); slave `broker --broker-id 1 --ha-master ... --flush F`; load
#   `bench produce --size 1024 --concurrency 64 --count COUNT`, started once
#   the master's petrel_replication_in_sync is 1.
#
#   bash scripts/bench-repl-ab.sh /tmp/petrel-A /tmp/petrel-B 3
#
# Environment: COUNT (messages a run, 200000), MODES (sync async), SINGLE
# (plain: the single broker serves no replication, --ha-listen ""; sr0: it
# serves it with --sync-replicas 0, as the eleventh sitting), PROF (a
# directory: master and slave write CPU profiles there, one per run), DUMP
# (a directory: the master's and slave's /metrics at the end of each run),
# SLAVE_DIR (a directory on another device for the slave's data, e.g.
# /dev/shm: a diagnostic that keeps the slave's fsyncs off the master's
# disk, as separate machines would; tmpfs fsyncs cost nothing, so it is
# not a durability figure).
# Output: one line a run, "MODE single|repl A|B MSGS_PER_SEC MASTER_CPU
# [SLAVE_CPU]" (the brokers' user+sys CPU seconds over the run). Ports 29876,
# 30911-30914, 30812-30813, 38080-38081 must be free.
set -uo pipefail
A=${1:?usage: bench-repl-ab.sh A_BIN B_BIN [RUNS]}; B=${2:?usage: bench-repl-ab.sh A_BIN B_BIN [RUNS]}; RUNS=${3:-3}
COUNT=${COUNT:-200000}
NS=127.0.0.1:29876
W=$(mktemp -d); trap 'kill $PIDS 2>/dev/null; rm -rf "$W"' EXIT
PIDS=""
up() { for _ in $(seq 300); do (exec 3<>/dev/tcp/${1%:*}/${1#*:}) 2>/dev/null && return 0; sleep 0.1; done; echo "$1 did not start" >&2; return 1; }
insync() { for _ in $(seq 300); do curl -s http://127.0.0.1:38080/metrics | grep -qE '^petrel_replication_in_sync(\{[^}]*\})? 1' && return 0; sleep 0.1; done; echo "slave not in sync" >&2; return 1; }
run() { # run LABEL BIN MODE single|repl N
  local bin=$2 mode=$3 kind=$4 n=$5 prof=() sprof=()
  local sdir=${SLAVE_DIR:+$SLAVE_DIR/petrel-bench-slave}; sdir=${sdir:-$W/s}
  rm -rf "$W"/m "$sdir"
  [ -n "${PROF:-}" ] && prof=(--cpu-profile "$PROF/$mode-$kind-$1-$n-master.pprof") && sprof=(--cpu-profile "$PROF/$mode-$kind-$1-$n-slave.pprof")
  "$bin" namesrv --namesrv-listen $NS --log-level warn >"$W/ns.log" 2>&1 & PIDS="$!"
  up $NS
  local sr=0 ha=127.0.0.1:30912; [ "$kind" = repl ] && sr=1
  [ "$kind" = single ] && [ "${SINGLE:-plain}" = plain ] && ha=""
  "$bin" broker --data-dir "$W/m" --broker-name bg --broker-id 0 --namesrv $NS --broker-listen 127.0.0.1:30911 \
    --ha-listen "$ha" --grpc-listen "" --http-listen 127.0.0.1:38080 --flush $mode --replication $mode \
    --sync-replicas $sr --log-level warn "${prof[@]}" >"$W/m.log" 2>&1 & PIDS="$PIDS $!"
  up 127.0.0.1:30911
  if [ "$kind" = repl ]; then
    "$bin" broker --data-dir "$sdir" --broker-name bg --broker-id 1 --namesrv $NS --broker-listen 127.0.0.1:30913 \
      --ha-master 127.0.0.1:30912 --grpc-listen "" --http-listen 127.0.0.1:38081 --flush $mode \
      --log-level warn "${sprof[@]}" >"$W/s.log" 2>&1 & PIDS="$PIDS $!"
    insync
  fi
  local r
  r=$("$bin" bench produce --namesrv $NS --size 1024 --concurrency 64 --count $COUNT --progress off 2>&1 | grep -oE 'msgs/s=[0-9.]+' | head -1 | cut -d= -f2)
  if [ -n "${DUMP:-}" ]; then
    curl -s http://127.0.0.1:38080/metrics >"$DUMP/$mode-$kind-$1-$n-master.prom"
    [ "$kind" = repl ] && curl -s http://127.0.0.1:38081/metrics >"$DUMP/$mode-$kind-$1-$n-slave.prom"
  fi
  local cpu="" hz; hz=$(getconf CLK_TCK)
  for p in ${PIDS#* }; do # the brokers' CPU seconds (user+sys), master first
    cpu="$cpu $(awk -v hz="$hz" '{printf "%.2f", ($14+$15)/hz}' /proc/"$p"/stat 2>/dev/null)"
  done
  for p in $PIDS; do kill -TERM "$p" 2>/dev/null; done
  for p in $PIDS; do wait "$p" 2>/dev/null; done
  PIDS=""
  echo "$mode $kind $1 $r$cpu"
}
for m in ${MODES:-sync async}; do
  for i in $(seq "$RUNS"); do
    run A "$A" "$m" single "$i"; run A "$A" "$m" repl "$i"
    run B "$B" "$m" single "$i"; run B "$B" "$m" repl "$i"
  done
done
