#!/usr/bin/env bash
# Petrel next to its peers, one after the other in one sitting on this
# machine: Apache RocketMQ 5.5.0, Kafka 4.1 (KRaft) and NATS JetStream
# 2.15.2, at one message size, and the ratio petrel/peer per scenario.
#
#   bash scripts/bench-peers.sh                         # 200k messages a run
#   COUNT=20000 bash scripts/bench-peers.sh             # a quick look
#   SKIP="kafka nats" bash scripts/bench-peers.sh       # only Petrel and Apache
#   P99_SECS=60 bash scripts/bench-peers.sh             # p99-half runs of 60 s
#
# Scenarios (SIZE bytes, default 1 KiB; INFLIGHT sends in flight, default 64):
#   produce-async   sends answered before their fsync: Petrel --flush async,
#                   Apache ASYNC_FLUSH, Kafka acks=all with its default (no
#                   fsync per message), NATS's default sync_interval (2 min)
#   produce-sync    sends answered after their fsync: Petrel --flush sync,
#                   Apache SYNC_FLUSH, Kafka acks=all with
#                   log.flush.interval.messages=1, NATS sync_interval: always
#   drain           one consumer reads the produce-async backlog
#   p99-half        the send latency (send to acknowledgement) at half the
#                   produce-async msgs/s the same system reached in this
#                   sitting, paced, for P99_SECS seconds (default 20; the
#                   count is half-rate x P99_SECS), against the async-flush
#                   server; the figure is the p99 in µs (lower is better)
#
# Load tools, each the system's own where it has one:
#   petrel          `petrel bench produce|consume` (async mode, INFLIGHT in flight)
#   apache          the same `petrel bench` against Apache RocketMQ (same
#                   client, other broker)
#   apache-own      Apache's benchmark programs (rocketmq-example 5.5.0):
#                   benchmark.Producer with INFLIGHT sync sending threads;
#                   benchmark.Consumer, whose figure is its peak 10 s window
#                   TPS (it has no end)
#   kafka           org.apache.kafka.tools.ProducerPerformance acks=all,
#                   ConsumerPerformance
#   nats            natsbench of ../shared/peers (async publish with up to
#                   1000 unacked, durable pull consumer with explicit acks)
# p99-half, each paced at its rate: petrel and apache `petrel bench produce
# --rate` (latency from the actual send, INFLIGHT slots), kafka
# ProducerPerformance --throughput (from the send() call, whole ms),
# nats scripts/natsrate, built here (from each message's scheduled time,
# 1000 unacked at most). apache-own has no paced mode.
# Every server listens on 127.0.0.1 with its data in a temporary folder and
# is stopped by its PID. Each line: "SYSTEM SCENARIO SIZE msgs=N msgs/s=X",
# p99-half's with "rate=R p50_us=.. p99_us=.."; then a table of petrel/peer
# per scenario (for msgs/s higher is better, for p99-half lower is better).
#
# Prerequisites: Go, a JDK 17 and Maven (the Apache and Kafka jars come from
# Maven Central into ~/.m2 the first time), and the NATS binaries
# (bash ../shared/peers/setup-nats.sh; PEERS_BIN, default
# ~/.cache/petrel-peers/bin). A system whose prerequisite is missing is
# skipped with a note.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

COUNT="${COUNT:-200000}"
SIZE="${SIZE:-1024}"
INFLIGHT="${INFLIGHT:-64}"
P99_SECS="${P99_SECS:-20}"
SKIP="${SKIP:-}"
PEERS_BIN="${PEERS_BIN:-$HOME/.cache/petrel-peers/bin}"
WORK="$(mktemp -d)"
PIDS=()
APACHE_DIRS=()
declare -A RATE LAT

stop() { # stop PID: SIGTERM, then SIGKILL after 30 s
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}
cleanup() {
  local pid d
  for pid in "${PIDS[@]}"; do stop "$pid"; done
  for d in "${APACHE_DIRS[@]}"; do bash scripts/apache-rocketmq.sh stop "$d" >/dev/null 2>&1 || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

skipped() { [[ " $SKIP " == *" $1 "* ]]; }
note() { echo "# $*"; }

wait_port() { # wait_port PORT PID LOG
  local i
  for i in $(seq 600); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || { echo "server (pid $2) exited; its log:" >&2; tail -20 "$3" >&2; return 1; }
    sleep 0.1
  done
  echo "port $1 did not open" >&2
  return 1
}

emit() { # emit SYSTEM SCENARIO RATE
  local r
  r=$(printf '%.0f' "${3:-0}")
  RATE["$1 $2"]=$r
  echo "$1 $2 ${SIZE}B msgs=$COUNT msgs/s=$r"
}

# half SYSTEM: sets HALF_RATE and HALF_COUNT for SYSTEM's p99-half run,
# half its produce-async msgs/s for P99_SECS; fails (with a note) without
# that rate.
half() {
  local r="${RATE[$1 produce-async]:-0}"
  if [ "$r" -lt 2 ]; then note "$1 p99-half skipped: no produce-async rate"; return 1; fi
  HALF_RATE=$((r / 2))
  HALF_COUNT=$(awk -v h="$HALF_RATE" -v s="$P99_SECS" 'BEGIN {n = int(h * s); print (n < 1 ? 1 : n)}')
}

emit_lat() { # emit_lat SYSTEM RATE MSGS MSGS/S P50_US P99_US
  local p50 p99
  p50=$(printf '%.0f' "${5:-0}")
  p99=$(printf '%.0f' "${6:-0}")
  [ "${3:-0}" -gt 0 ] && LAT["$1"]=$p99
  echo "$1 p99-half ${SIZE}B msgs=${3:-0} msgs/s=$(printf '%.0f' "${4:-0}") rate=$2 p50_us=$p50 p99_us=$p99"
}

classpath() { # classpath MODULE: the jars of test/reference/MODULE/pom.xml
  local dir="$ROOT/test/reference/$1" cp="$ROOT/test/reference/$1/target/classpath.txt"
  if [ ! -s "$cp" ] || [ "$dir/pom.xml" -nt "$cp" ]; then
    (cd "$dir" && mvn -q -B -Dstyle.color=never dependency:build-classpath -Dmdep.outputFile="$cp") >&2
  fi
  cat "$cp"
}

go build -buildvcs=true -o "$WORK/petrel" ./cmd/petrel
PETREL="$WORK/petrel"
echo "# $(date -u +%FT%TZ) $(nproc) cores; $("$PETREL" --version); ${SIZE}-byte messages, count $COUNT, $INFLIGHT in flight"

# petrel_bench NS SYSTEM FLUSH: produce then drain with `petrel bench`.
petrel_bench() {
  local out
  out=$("$PETREL" bench produce --namesrv "$1" --topic "Bench$3" --size "$SIZE" --count "$COUNT" \
    --concurrency "$INFLIGHT" --progress off -o json)
  emit "$2" "produce-$3" "$(jq -r .msgs_per_sec <<<"$out")"
  if [ "$3" = async ]; then
    out=$("$PETREL" bench consume --namesrv "$1" --topic "Bench$3" --count "$COUNT" --group "BenchDrain" \
      --progress off -o json)
    emit "$2" drain "$(jq -r .msgs_per_sec <<<"$out")"
    if half "$2"; then
      out=$("$PETREL" bench produce --namesrv "$1" --topic BenchP99 --size "$SIZE" --count "$HALF_COUNT" --rate "$HALF_RATE" \
        --concurrency "$INFLIGHT" --scenario p99-half --progress off -o json)
      # shellcheck disable=SC2046 # four numbers, split on purpose
      emit_lat "$2" "$HALF_RATE" $(jq -r '"\(.msgs) \(.msgs_per_sec) \(.latency_us.p50 // 0) \(.latency_us.p99 // 0)"' <<<"$out")
    fi
  fi
}

# ---- Petrel ---------------------------------------------------------------
for flush in async sync; do
  rm -rf "$WORK/petrel-data"
  "$PETREL" server --data-dir "$WORK/petrel-data" --flush "$flush" \
    --namesrv-listen 127.0.0.1:19876 --broker-listen 127.0.0.1:19911 \
    --http-listen 127.0.0.1:19080 --grpc-listen off >"$WORK/petrel-$flush.log" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  wait_port 19911 "$pid" "$WORK/petrel-$flush.log"
  petrel_bench 127.0.0.1:19876 petrel "$flush"
  stop "$pid"
done

# ---- Apache RocketMQ 5.5.0 ------------------------------------------------
if skipped apache; then
  note "apache skipped (SKIP)"
elif ! command -v mvn >/dev/null || ! command -v java >/dev/null; then
  note "apache skipped: needs a JDK and Maven on PATH"
else
  ACP="$(classpath apache)"
  for flush in async sync; do
    d="$WORK/apache-$flush"
    APACHE_DIRS+=("$d")
    FLUSH=$flush NAMESRV_PORT=19876 BROKER_PORT=19911 bash scripts/apache-rocketmq.sh start "$d" >/dev/null
    petrel_bench 127.0.0.1:19876 apache "$flush"
    # Apache's own producer: INFLIGHT threads of sync sends. Its [Complete]
    # line's TPS is over its last 10 one-second snapshots.
    out=$(java -Xmx512m -XX:+UseSerialGC "-Duser.home=$d" -cp "$ACP" org.apache.rocketmq.example.benchmark.Producer \
      -n 127.0.0.1:19876 -t "BenchOwn$flush" -s "$SIZE" -w "$INFLIGHT" -q "$COUNT" -ri 1000 2>&1 || true)
    r=$(grep -m1 '^\[Complete\]' <<<"$out" | sed -nE 's/.*Send TPS: ([0-9]+).*/\1/p')
    [ -n "$r" ] || { note "apache-own produce-$flush: no [Complete] TPS line (a run under 2 s has none); tail:"; tail -3 <<<"$out" | sed 's/^/#   /'; }
    emit apache-own "produce-$flush" "${r:-0}"
    if [ "$flush" = async ]; then
      # Apache's consumer runs until stopped: give it until the backlog is
      # read (its Consume TPS falls to 0 after it was above) or 120 s.
      java -Xmx512m -XX:+UseSerialGC "-Duser.home=$d" -cp "$ACP" org.apache.rocketmq.example.benchmark.Consumer \
        -n 127.0.0.1:19876 -t "BenchOwn$flush" -g BenchOwnDrain -ri 1000 >"$WORK/apache-consumer.out" 2>&1 &
      cpid=$!
      PIDS+=("$cpid")
      peak=0
      for i in $(seq 120); do
        sleep 1
        last=$(grep -o 'Consume TPS: [0-9]*' "$WORK/apache-consumer.out" | tail -1 | grep -o '[0-9]*$' || true)
        [ -n "$last" ] || continue
        [ "$last" -gt "$peak" ] && peak=$last
        [ "$peak" -gt 0 ] && [ "$last" -eq 0 ] && break
      done
      stop "$cpid"
      emit apache-own drain "$peak"
    fi
    bash scripts/apache-rocketmq.sh stop "$d" >/dev/null
  done
fi

# ---- Kafka 4.1, KRaft -----------------------------------------------------
if skipped kafka; then
  note "kafka skipped (SKIP)"
elif ! command -v mvn >/dev/null || ! command -v java >/dev/null; then
  note "kafka skipped: needs a JDK and Maven on PATH"
else
  KCP="$(classpath kafka)"
  kjava() { java -Xmx512m -XX:+UseSerialGC -Dlog4j2.level=warn -cp "$KCP" "$@"; }
  for flush in async sync; do
    k="$WORK/kafka-$flush"
    mkdir -p "$k"
    {
      echo "process.roles=broker,controller"
      echo "node.id=1"
      echo "controller.quorum.voters=1@127.0.0.1:19093"
      echo "listeners=PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093"
      echo "advertised.listeners=PLAINTEXT://127.0.0.1:19092"
      echo "controller.listener.names=CONTROLLER"
      echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
      echo "log.dirs=$k/data"
      echo "num.partitions=8"
      echo "offsets.topic.replication.factor=1"
      echo "transaction.state.log.replication.factor=1"
      echo "transaction.state.log.min.isr=1"
      echo "group.initial.rebalance.delay.ms=0"
      [ "$flush" = sync ] && echo "log.flush.interval.messages=1"
    } >"$k/server.properties"
    kjava kafka.tools.StorageTool format -t "$(kjava kafka.tools.StorageTool random-uuid 2>/dev/null)" \
      -c "$k/server.properties" >"$k/format.out" 2>&1
    kjava -Xms256m kafka.Kafka "$k/server.properties" >"$k/server.out" 2>&1 &
    kpid=$!
    PIDS+=("$kpid")
    wait_port 19092 "$kpid" "$k/server.out"
    out=$(kjava org.apache.kafka.tools.ProducerPerformance --topic "bench-$flush" --num-records "$COUNT" \
      --record-size "$SIZE" --throughput -1 \
      --producer-props bootstrap.servers=127.0.0.1:19092 acks=all "max.in.flight.requests.per.connection=5" 2>&1 | grep 'records/sec' | tail -1)
    emit kafka "produce-$flush" "$(sed -nE 's/.* ([0-9.]+) records\/sec.*/\1/p' <<<"$out")"
    if [ "$flush" = async ]; then
      # CSV: start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, ...
      out=$(kjava org.apache.kafka.tools.ConsumerPerformance --bootstrap-server 127.0.0.1:19092 \
        --topic "bench-$flush" --messages "$COUNT" --group bench-drain --timeout 60000 2>/dev/null | tail -1)
      emit kafka drain "$(cut -d, -f6 <<<"$out" | tr -d ' ')"
      if half kafka; then
        # The summary: "N records sent, X records/sec (Y MB/sec), A ms avg
        # latency, M ms max latency, P ms 50th, P ms 95th, P ms 99th, P ms 99.9th."
        out=$(kjava org.apache.kafka.tools.ProducerPerformance --topic bench-p99 --num-records "$HALF_COUNT" \
          --record-size "$SIZE" --throughput "$HALF_RATE" \
          --producer-props bootstrap.servers=127.0.0.1:19092 acks=all "max.in.flight.requests.per.connection=5" 2>&1 | grep '99th' | tail -1 || true)
        emit_lat kafka "$HALF_RATE" "$(sed -nE 's/^([0-9]+) records sent.*/\1/p' <<<"$out")" \
          "$(sed -nE 's/.* ([0-9.]+) records\/sec.*/\1/p' <<<"$out")" \
          "$(sed -nE 's/.* ([0-9.]+) ms 50th.*/\1/p' <<<"$out" | awk '{print $1 * 1000}')" \
          "$(sed -nE 's/.* ([0-9.]+) ms 99th.*/\1/p' <<<"$out" | awk '{print $1 * 1000}')"
      fi
    fi
    stop "$kpid"
  done
fi

# ---- NATS JetStream 2.15.2 ------------------------------------------------
if skipped nats; then
  note "nats skipped (SKIP)"
elif [ ! -x "$PEERS_BIN/nats-server" ] || [ ! -x "$PEERS_BIN/natsbench" ]; then
  note "nats skipped: no $PEERS_BIN/nats-server or natsbench (bash ../shared/peers/setup-nats.sh)"
else
  # Our paced publisher for p99-half (natsbench has no rate): a module of
  # its own, so it needs the NATS client in the module cache or a proxy.
  NATSRATE="$WORK/natsrate"
  (cd scripts/natsrate && go build -o "$NATSRATE" .) || { NATSRATE=; note "nats p99-half skipped: scripts/natsrate did not build"; }
  nats_rate() { grep -m1 'msgs/s=' | sed -E 's/.*msgs\/s=([0-9.]+).*/\1/'; }
  for flush in async sync; do
    line="# sync_interval: default (2m)"
    [ "$flush" = sync ] && line="sync_interval: always"
    rm -rf "$WORK/nats-store"
    printf 'listen: 127.0.0.1:14222\njetstream {\n  store_dir: "%s"\n  max_file_store: 40GB\n  %s\n}\n' \
      "$WORK/nats-store" "$line" >"$WORK/nats-$flush.conf"
    "$PEERS_BIN/nats-server" -c "$WORK/nats-$flush.conf" >"$WORK/nats-$flush.log" 2>&1 &
    npid=$!
    PIDS+=("$npid")
    wait_port 14222 "$npid" "$WORK/nats-$flush.log"
    nb() { "$PEERS_BIN/natsbench" -url nats://127.0.0.1:14222 -maxsecs 60 "$@" 2>/dev/null; }
    emit nats "produce-$flush" "$(nb -mode asyncpub -storage file -size "$SIZE" -msgs "$COUNT" -label "produce-$flush" | nats_rate)"
    if [ "$flush" = async ]; then
      emit nats drain "$(nb -mode consume -msgs 0 -label drain | nats_rate)"
    fi
    nb -mode delete >/dev/null || true
    if [ "$flush" = async ] && [ -n "$NATSRATE" ] && half nats; then
      out=$("$NATSRATE" -url nats://127.0.0.1:14222 -size "$SIZE" -rate "$HALF_RATE" -msgs "$HALF_COUNT" -label p99-half)
      field() { grep -o " $1=[0-9.]*" <<<"$out" | cut -d= -f2; }
      emit_lat nats "$HALF_RATE" "$(field msgs)" "$(field msgs/s)" "$(field p50_us)" "$(field p99_us)"
    fi
    stop "$npid"
  done
fi

# ---- Ratios ---------------------------------------------------------------
cell() { # cell PETREL PEER: "petrel/peer (peer)", or - when either is missing
  if [ -n "$1" ] && [ -n "$2" ] && [ "$2" != 0 ]; then
    printf ' %18s' "$(awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f (%d)", a / b, b}')"
  elif [ "$2" = 0 ]; then
    printf ' %18s' "- (0)" # e.g. Kafka's p99 under its 1 ms resolution
  else
    printf ' %18s' -
  fi
}
echo
printf '%-15s %12s' scenario petrel
peers=(apache apache-own kafka nats)
for p in "${peers[@]}"; do printf ' %18s' "petrel/$p"; done
echo
for s in produce-async produce-sync drain; do
  printf '%-15s %12s' "$s" "${RATE[petrel $s]:--}"
  for p in "${peers[@]}"; do cell "${RATE[petrel $s]:-}" "${RATE[$p $s]:-}"; done
  echo
done
# p99-half: each system's p99 send latency (µs) at half its own
# produce-async rate; here petrel/peer below 1 is petrel the faster.
printf '%-15s %12s' p99-half "${LAT[petrel]:--}"
for p in "${peers[@]}"; do cell "${LAT[petrel]:-}" "${LAT[$p]:-}"; done
echo
note "produce-*, drain: msgs/s, petrel/peer above 1 is petrel faster (the peer's msgs/s in parentheses)"
note "p99-half: p99 send latency in µs at half each system's produce-async rate, petrel/peer below 1 is petrel lower (the peer's p99 in parentheses)"
