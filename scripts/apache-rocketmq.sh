#!/usr/bin/env bash
# The reference broker: Apache RocketMQ 5.5.0's name server and broker (and,
# with PROXY=1, its gRPC proxy in cluster mode), run from the jars Maven
# resolves for test/reference/apache/pom.xml, on loopback.
#
#   bash scripts/apache-rocketmq.sh start DIR    # config, store, logs, PIDs in DIR
#   bash scripts/apache-rocketmq.sh stop DIR     # stops what start started, by PID
#
# start writes DIR/namesrv.conf and DIR/broker.conf, starts NamesrvStartup
# and BrokerStartup (each its own JVM, -Xmx$XMX) with user.home and
# ROCKETMQ_HOME set to DIR (so the store, kvConfig.json and the logs land
# there), waits until the name server answers and the broker's port opens,
# writes DIR/namesrv.pid and DIR/broker.pid (and DIR/proxy.pid), then
# prints the name server address. It fails, with the log's tail, if a
# server exits or does not answer in 60 s.
#
# Environment:
#   FLUSH=sync|async      the broker's flushDiskType (default sync: SYNC_FLUSH,
#                         a send is answered after its fsync)
#   NAMESRV_PORT=19876    BROKER_PORT=19911 (it also uses BROKER_PORT-2 and
#                         BROKER_PORT+1)   PROXY_PORT=18081 (gRPC, PROXY=1)
#   XMX=512m              heap of each JVM
#   BROKER_EXTRA='k=v;k=v' more broker.conf lines (e.g. messageDelayLevel=...)
#   PROXY=1               also start ProxyStartup in CLUSTER mode (gRPC on
#                         PROXY_PORT, remoting on PROXY_PORT+1)
#
# Prerequisites: a JDK (17) and Maven; the first start downloads the jars
# into ~/.m2. Nothing is installed elsewhere.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
CMD=$1
mkdir -p "$2"
DIR="$(cd "$2" && pwd)"

NAMESRV_PORT="${NAMESRV_PORT:-19876}"
BROKER_PORT="${BROKER_PORT:-19911}"
PROXY_PORT="${PROXY_PORT:-18081}"
FLUSH="${FLUSH:-sync}"
XMX="${XMX:-512m}"

stop_pid() { # stop_pid PIDFILE: SIGTERM (the servers' shutdown hooks run), SIGKILL after 30 s
  local f=$1 pid i
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -TERM "$pid" 2>/dev/null; then
    for i in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

if [ "$CMD" = stop ]; then
  # The proxy and the broker first: the broker unregisters from the name server.
  stop_pid "$DIR/proxy.pid"
  stop_pid "$DIR/broker.pid"
  stop_pid "$DIR/namesrv.pid"
  exit 0
fi
[ "$CMD" = start ] || usage

for f in namesrv broker proxy; do
  if [ -f "$DIR/$f.pid" ] && kill -0 "$(cat "$DIR/$f.pid")" 2>/dev/null; then
    echo "$f is already running in $DIR (pid $(cat "$DIR/$f.pid")); stop it first" >&2
    exit 1
  fi
done

# The class path: resolved once, kept beside the pom (target/ is not committed).
POM_DIR="$ROOT/test/reference/apache"
CP_FILE="$POM_DIR/target/classpath.txt"
if [ ! -s "$CP_FILE" ] || [ "$POM_DIR/pom.xml" -nt "$CP_FILE" ]; then
  (cd "$POM_DIR" && mvn -q -B -Dstyle.color=never dependency:build-classpath -Dmdep.outputFile="$CP_FILE") >&2
fi
CP="$(cat "$CP_FILE")"

case "$FLUSH" in
  sync) FLUSH_TYPE=SYNC_FLUSH ;;
  async) FLUSH_TYPE=ASYNC_FLUSH ;;
  *) echo "FLUSH must be sync or async, not $FLUSH" >&2; exit 2 ;;
esac

mkdir -p "$DIR/store" "$DIR/conf"
cat >"$DIR/namesrv.conf" <<EOF
listenPort=$NAMESRV_PORT
bindAddress=127.0.0.1
kvConfigPath=$DIR/namesrv/kvConfig.json
EOF
cat >"$DIR/broker.conf" <<EOF
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=0
brokerRole=ASYNC_MASTER
namesrvAddr=127.0.0.1:$NAMESRV_PORT
brokerIP1=127.0.0.1
listenPort=$BROKER_PORT
bindAddress=127.0.0.1
haListenPort=$((BROKER_PORT + 1))
storePathRootDir=$DIR/store
storePathCommitLog=$DIR/store/commitlog
flushDiskType=$FLUSH_TYPE
autoCreateTopicEnable=true
autoCreateSubscriptionGroup=true
enablePropertyFilter=true
mappedFileSizeCommitLog=134217728
diskMaxUsedSpaceRatio=95
EOF
if [ -n "${BROKER_EXTRA:-}" ]; then
  tr ';' '\n' <<<"$BROKER_EXTRA" >>"$DIR/broker.conf"
fi

JVM=(-Xms128m "-Xmx$XMX" -XX:+UseSerialGC -Xss512k "-Duser.home=$DIR" "-Drocketmq.home.dir=$DIR"
  -Drocketmq.client.logUseSlf4j=true -cp "$CP")
export ROCKETMQ_HOME="$DIR"

launch() { # launch NAME CLASS ARGS...: in its own session, PID into DIR/NAME.pid
  local name=$1 class=$2
  shift 2
  setsid java "${JVM[@]}" "$class" "$@" >"$DIR/$name.out" 2>&1 </dev/null &
  echo $! >"$DIR/$name.pid"
}

fail() { # fail NAME WHY
  echo "$1: $2; the tail of $DIR/$1.out:" >&2
  tail -30 "$DIR/$1.out" >&2
  "$0" stop "$DIR" || true
  exit 1
}

wait_port() { # wait_port NAME PORT
  local i
  for i in $(seq 600); do
    (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && return 0
    kill -0 "$(cat "$DIR/$1.pid")" 2>/dev/null || fail "$1" "exited"
    sleep 0.1
  done
  fail "$1" "port $2 did not open in 60 s"
}

wait_line() { # wait_line NAME TEXT: the server printed TEXT (its boot line)
  local i
  for i in $(seq 600); do
    grep -q "$2" "$DIR/$1.out" 2>/dev/null && return 0
    kill -0 "$(cat "$DIR/$1.pid")" 2>/dev/null || fail "$1" "exited"
    sleep 0.1
  done
  fail "$1" "did not print \"$2\" in 60 s"
}

launch namesrv org.apache.rocketmq.namesrv.NamesrvStartup -c "$DIR/namesrv.conf"
wait_line namesrv "The Name Server boot success"
wait_port namesrv "$NAMESRV_PORT"

launch broker org.apache.rocketmq.broker.BrokerStartup -c "$DIR/broker.conf"
wait_line broker "boot success"
wait_port broker "$BROKER_PORT"

# The name server answers when it routes the broker's TBW102 (the topic
# autoCreateTopicEnable registers): ask it with mqadmin's topicRoute.
ROUTED=
for i in $(seq 120); do
  if java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "-Duser.home=$DIR" -cp "$CP" \
    org.apache.rocketmq.tools.command.MQAdminStartup topicRoute -n "127.0.0.1:$NAMESRV_PORT" -t TBW102 \
    >"$DIR/route.out" 2>&1 && grep -q "127.0.0.1:$BROKER_PORT" "$DIR/route.out"; then
    ROUTED=1
    break
  fi
  kill -0 "$(cat "$DIR/broker.pid")" 2>/dev/null || fail broker "exited"
  sleep 0.5
done
[ -n "$ROUTED" ] || fail broker "the name server did not route the broker in 60 s (see $DIR/route.out)"

if [ "${PROXY:-}" = 1 ]; then
  cat >"$DIR/rmq-proxy.json" <<EOF
{
  "rocketMQClusterName": "DefaultCluster",
  "localServeAddr": "127.0.0.1",
  "namesrvAddr": "127.0.0.1:$NAMESRV_PORT",
  "grpcServerPort": $PROXY_PORT,
  "remotingListenPort": $((PROXY_PORT + 1)),
  "metricsPromExporterPort": 0
}
EOF
  launch proxy org.apache.rocketmq.proxy.ProxyStartup -pm cluster -pc "$DIR/rmq-proxy.json"
  wait_port proxy "$PROXY_PORT"
fi

echo "127.0.0.1:$NAMESRV_PORT"
