#!/usr/bin/env bash
# A real Apache Kafka cluster on this machine: 3 KRaft nodes (each broker and controller, a static
# quorum) on free loopback ports, for trying the engine on real brokers and for the `kafka` test
# tier (tests/kafka_real/).
#
#   scripts/kafka_cluster.sh start          install what is missing, fetch Kafka, start a new
#                                           cluster (stopping the run folder's old one), create
#                                           the engine's topics, print the bootstrap addresses
#   scripts/kafka_cluster.sh fetch          only install what is missing and fetch Kafka
#   scripts/kafka_cluster.sh stop           stop every node (SIGTERM, then SIGKILL after 30 s)
#   scripts/kafka_cluster.sh kill N         SIGKILL node N (1-3)
#   scripts/kafka_cluster.sh pause N        SIGSTOP node N;  resume N: SIGCONT
#   scripts/kafka_cluster.sh restart N      start node N again if it is down (after kill), and
#                                           wait until it answers
#   scripts/kafka_cluster.sh status         each node's state, and the addresses
#   scripts/kafka_cluster.sh leader TOPIC P the node leading partition P of TOPIC
#   scripts/kafka_cluster.sh env            the state file (shell assignments, see below)
#
# Environment: KAFKA_RUN_DIR (default out/kafka-cluster: the nodes' data, logs, TLS files and the
# state file), RTB_KAFKA_VERSION (default 4.4.0), KAFKA_HEAP (default 320m per node),
# KAFKA_EVENTS_PARTITIONS (default 8), KAFKA_NICE (default 0: the nodes' nice value; the test
# tier runs them at 10, so that a node's start never preempts the latency-checked tests beside).
#
# The state file ($KAFKA_RUN_DIR/cluster.env) sets KAFKA_BOOTSTRAP (PLAINTEXT),
# KAFKA_SASL_BOOTSTRAP (SASL_SSL: SCRAM-SHA-512 and PLAIN; KAFKA_SASL_MECHANISM is the one this
# machine's librdkafka can use, see client_mechanism), KAFKA_SASL_USER, KAFKA_SASL_PASSWORD,
# KAFKA_CA_PEM (the brokers' self-signed certificate, for ssl.ca.location) and
# KAFKA_SASL_PROPERTIES (a librdkafka properties file for the SASL_SSL listener); the same
# settings as a bidder config's kafka.properties are in $KAFKA_RUN_DIR/sasl-properties.yaml.
# Kafka's jars come from Maven (scripts/kafka/pom.xml) into .cache/kafka/<version>/, once.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VERSION=${RTB_KAFKA_VERSION:-4.4.0}
RUN=${KAFKA_RUN_DIR:-$ROOT/out/kafka-cluster}
HEAP=${KAFKA_HEAP:-320m}
EVENTS_PARTITIONS=${KAFKA_EVENTS_PARTITIONS:-8}
JARS=$ROOT/.cache/kafka/$VERSION
STATE=$RUN/cluster.env
NODES=(1 2 3)
SASL_USER=rtb
SASL_PASSWORD=rtb-sasl-secret
STORE_PASSWORD=rtb-keystore-secret
START_TIMEOUT=${KAFKA_START_TIMEOUT:-90}

die() {
  echo "kafka_cluster: $*" >&2
  exit 1
}
say() { echo "kafka_cluster: $*" >&2; }

# A JRE, Maven and kcat (readiness, leaders), with apt, where missing (as root, or with sudo).
install_tools() {
  local missing=()
  command -v java >/dev/null && command -v keytool >/dev/null || missing+=(openjdk-17-jre-headless)
  command -v mvn >/dev/null || missing+=(maven)
  command -v kcat >/dev/null || missing+=(kcat)
  ((${#missing[@]})) || return 0
  say "installing ${missing[*]}"
  local sudo=""
  [[ $(id -u) -eq 0 ]] || sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Kafka's jars into the cache folder, once (a folder left half-written by an interrupted fetch is
# never used: the jars go to a temporary folder first).
fetch() {
  [[ -f $JARS/.complete ]] && return 0
  local t0=$SECONDS tmp=$JARS.tmp.$$
  say "fetching Apache Kafka $VERSION with Maven into ${JARS#"$ROOT"/}"
  rm -rf "$tmp"
  mvn -q -B -f "$ROOT/scripts/kafka/pom.xml" -Dkafka.version="$VERSION" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >&2 ||
    die "Maven could not fetch org.apache.kafka:kafka_2.13:$VERSION"
  touch "$tmp/.complete"
  rm -rf "$JARS"
  mv "$tmp" "$JARS"
  say "fetched in $((SECONDS - t0)) s"
}

free_ports() {  # N: N distinct free loopback ports
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

# java with Kafka's classpath and a log4j2 config; JAVA_OPTS may add more.
kjava() {
  java -Xshare:auto -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx256m \
    -Dlog4j2.configurationFile="$RUN/tools-log4j2.properties" -cp "$JARS/*" "$@"
}

write_log_configs() {
  cat > "$RUN/log4j2.properties" <<'EOF'
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
EOF
  cat > "$RUN/tools-log4j2.properties" <<'EOF'
status = warn
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %p %m%n
rootLogger.level = ERROR
rootLogger.appenderRef.err.ref = err
EOF
}

node_props() {  # N
  local n=$1 b=${PORT_PLAIN[$1]} s=${PORT_SASL[$1]} c=${PORT_CTRL[$1]} voters="" i
  for i in "${NODES[@]}"; do voters+="${voters:+,}$i@127.0.0.1:${PORT_CTRL[$i]}"; done
  cat <<EOF
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$b,SASL_SSL://127.0.0.1:$s,CONTROLLER://127.0.0.1:$c
advertised.listeners=PLAINTEXT://127.0.0.1:$b,SASL_SSL://127.0.0.1:$s
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$RUN/node-$n/data
num.partitions=1
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
share.coordinator.state.topic.replication.factor=3
share.coordinator.state.topic.min.isr=2
auto.create.topics.enable=false
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=2
num.recovery.threads.per.data.dir=1
background.threads=2
log.cleaner.threads=1
log.cleaner.dedupe.buffer.size=8388608
log.cleaner.backoff.ms=1000
sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$SASL_USER="$SASL_PASSWORD";
ssl.keystore.type=PKCS12
ssl.keystore.location=$RUN/tls/broker.p12
ssl.keystore.password=$STORE_PASSWORD
ssl.key.password=$STORE_PASSWORD
EOF
}

# The SASL mechanism the clients here use: SCRAM-SHA-512, unless the engine's librdkafka is older
# than 2.6.1, whose SCRAM Kafka 4.x brokers refuse (it sent the client nonce twice in its final
# message; brokers since 4.0 check the nonce strictly): then PLAIN, the same user and password,
# still inside TLS. RTB_KAFKA_SASL_MECHANISM overrides.
client_mechanism() {
  if [[ -n ${RTB_KAFKA_SASL_MECHANISM:-} ]]; then
    echo "$RTB_KAFKA_SASL_MECHANISM"
    return
  fi
  local v
  v=$(pkg-config --modversion rdkafka 2>/dev/null || echo 0)
  if [[ $(printf '%s\n2.6.1\n' "$v" | sort -V | head -1) == 2.6.1 ]]; then
    echo SCRAM-SHA-512
  else
    echo PLAIN
  fi
}

write_state() {
  local plain="" sasl="" i mech
  mech=$(client_mechanism)
  for i in "${NODES[@]}"; do
    plain+="${plain:+,}127.0.0.1:${PORT_PLAIN[$i]}"
    sasl+="${sasl:+,}127.0.0.1:${PORT_SASL[$i]}"
  done
  cat > "$RUN/sasl-client.properties" <<EOF
security.protocol=SASL_SSL
sasl.mechanism=$mech
sasl.username=$SASL_USER
sasl.password=$SASL_PASSWORD
ssl.ca.location=$RUN/tls/ca.pem
EOF
  cat > "$RUN/sasl-properties.yaml" <<EOF
  properties: {security.protocol: SASL_SSL, sasl.mechanism: $mech, sasl.username: $SASL_USER, sasl.password: $SASL_PASSWORD, ssl.ca.location: $RUN/tls/ca.pem}
EOF
  cat > "$STATE.tmp" <<EOF
KAFKA_VERSION=$VERSION
KAFKA_BOOTSTRAP=$plain
KAFKA_SASL_BOOTSTRAP=$sasl
KAFKA_SASL_USER=$SASL_USER
KAFKA_SASL_MECHANISM=$mech
KAFKA_SASL_PASSWORD=$SASL_PASSWORD
KAFKA_CA_PEM=$RUN/tls/ca.pem
KAFKA_SASL_PROPERTIES=$RUN/sasl-client.properties
KAFKA_PORTS_PLAIN=(0 ${PORT_PLAIN[1]} ${PORT_PLAIN[2]} ${PORT_PLAIN[3]})
KAFKA_PORTS_SASL=(0 ${PORT_SASL[1]} ${PORT_SASL[2]} ${PORT_SASL[3]})
KAFKA_PORTS_CTRL=(0 ${PORT_CTRL[1]} ${PORT_CTRL[2]} ${PORT_CTRL[3]})
EOF
  mv "$STATE.tmp" "$STATE"
}

load_state() {
  [[ -f $STATE ]] || die "no cluster state in $STATE: run '$0 start' first"
  # shellcheck disable=SC1090
  source "$STATE"
  PORT_PLAIN=("${KAFKA_PORTS_PLAIN[@]}")
  PORT_SASL=("${KAFKA_PORTS_SASL[@]}")
  PORT_CTRL=("${KAFKA_PORTS_CTRL[@]}")
}

# A self-signed certificate for 127.0.0.1 and localhost, made at every start; its PEM is the
# clients' CA (librdkafka's ssl.ca.location takes PEM).
make_tls() {
  rm -rf "$RUN/tls"
  mkdir -p "$RUN/tls"
  keytool -genkeypair -alias broker -keyalg RSA -keysize 2048 -validity 30 \
    -dname "CN=localhost, O=rtb test cluster" -ext "SAN=ip:127.0.0.1,dns:localhost" \
    -storetype PKCS12 -keystore "$RUN/tls/broker.p12" -storepass "$STORE_PASSWORD" \
    -keypass "$STORE_PASSWORD" 2>/dev/null
  keytool -exportcert -rfc -alias broker -keystore "$RUN/tls/broker.p12" \
    -storepass "$STORE_PASSWORD" -file "$RUN/tls/ca.pem" 2>/dev/null
}

pid_of() { cat "$RUN/node-$1/pid" 2>/dev/null || true; }
alive() {
  local pid
  pid=$(pid_of "$1")
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null
}

start_node() {  # N: starts node N in the background (its data already formatted)
  local n=$1
  alive "$n" && return 0
  mkdir -p "$RUN/node-$n/logs"
  # setsid: the node outlives the shell that started it, and a terminal's ^C does not reach it.
  # It keeps none of the caller's descriptors beyond 0-2: a lock the caller runs under (flock
  # hands its lock down to its command) would be held as long as the node runs.
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      if ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    # shellcheck disable=SC2086
    exec setsid nice -n "${KAFKA_NICE:-0}" java -Xms"$HEAP" -Xmx"$HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
      -XX:MaxMetaspaceSize=160m -XX:ReservedCodeCacheSize=64m -Xss512k \
      -Djava.awt.headless=true -Dkafka.logs.dir="$RUN/node-$n/logs" \
      -Dlog4j2.configurationFile="$RUN/log4j2.properties" ${KAFKA_JAVA_OPTS:-} \
      -cp "$JARS/*" kafka.Kafka "$RUN/node-$n/server.properties" \
      > "$RUN/node-$n/logs/stdout.log" 2>&1 < /dev/null
  ) &
  echo $! > "$RUN/node-$n/pid"
}

# Whether node N's broker answers on its PLAINTEXT listener (a metadata request).
answers() {
  local n=$1
  alive "$n" || return 1
  kcat_ok "127.0.0.1:${PORT_PLAIN[$n]}"
}
kcat_ok() {
  if command -v kcat >/dev/null; then
    timeout 5 kcat -b "$1" -L -m 3 >/dev/null 2>&1
  else
    (exec 3<>"/dev/tcp/${1%:*}/${1#*:}") 2>/dev/null
  fi
}

wait_nodes() {  # N...: a bounded wait until each answers; the log's tail otherwise
  local end=$((SECONDS + START_TIMEOUT)) n
  for n in "$@"; do
    until answers "$n"; do
      if ! alive "$n"; then
        tail -20 "$RUN/node-$n/logs/server.log" "$RUN/node-$n/logs/stdout.log" >&2 2>/dev/null || true
        die "node $n exited while starting (its log above: $RUN/node-$n/logs/)"
      fi
      if ((SECONDS >= end)); then
        tail -20 "$RUN/node-$n/logs/server.log" "$RUN/node-$n/logs/stdout.log" >&2 2>/dev/null || true
        die "node $n did not answer within $START_TIMEOUT s (its log above: $RUN/node-$n/logs/)"
      fi
      sleep 0.2
    done
  done
}

# The engine's topics (kafka/README.md, "Topics on your own cluster"): replication 3,
# min.insync.replicas 2, the grants topics compacted; created in one JVM each, side by side.
create_topics() {
  local common=(--bootstrap-server "$KAFKA_BOOTSTRAP" --create --if-not-exists
                --replication-factor 3 --config min.insync.replicas=2)
  local pids=() spec name parts configs
  local specs=(
    "rtb.events $EVENTS_PARTITIONS"
    "rtb.policy 1"
    "rtb.clock 1"
    "rtb.lease.requests 4"
    "rtb.notices 4"
    "rtb.lease.grants 4 cleanup.policy=compact min.compaction.lag.ms=172800000"
    "rtb.lease.grants.coordinators 1 cleanup.policy=compact"
  )
  for spec in "${specs[@]}"; do
    read -r name parts configs <<<"$spec"
    local extra=() c
    for c in $configs; do extra+=(--config "$c"); done
    kjava org.apache.kafka.tools.TopicCommand "${common[@]}" --topic "$name" \
      --partitions "$parts" "${extra[@]}" > "$RUN/topic-$name.log" 2>&1 &
    pids+=($!)
  done
  local i ok=1
  for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
      read -r name _ <<<"${specs[$i]}"
      say "could not create $name:"
      cat "$RUN/topic-$name.log" >&2
      ok=0
    fi
  done
  ((ok)) || die "topics not created"
}

cmd_start() {
  install_tools
  fetch
  mkdir -p "$RUN"
  if [[ -f $STATE ]]; then
    load_state
    local n up=0
    for n in "${NODES[@]}"; do alive "$n" && up=$((up + 1)); done
    if ((up > 0)); then
      say "a cluster was running from $RUN ($up nodes): stopping it first"
      stop_nodes "${NODES[@]}"
    fi
  fi
  local t0=$SECONDS
  # A fresh cluster each start: new ports, new data, new users.
  rm -rf "$RUN"
  mkdir -p "$RUN"
  write_log_configs
  read -r -a ports <<<"$(free_ports 9)"
  PORT_PLAIN=(0 "${ports[@]:0:3}")
  PORT_SASL=(0 "${ports[@]:3:3}")
  PORT_CTRL=(0 "${ports[@]:6:3}")
  make_tls
  local id n
  id=$(kjava kafka.tools.StorageTool random-uuid)
  for n in "${NODES[@]}"; do
    mkdir -p "$RUN/node-$n/data" "$RUN/node-$n/logs"
    node_props "$n" > "$RUN/node-$n/server.properties"
  done
  # Formatting is one JVM per node: side by side.
  local pids=()
  for n in "${NODES[@]}"; do
    kjava kafka.tools.StorageTool format -t "$id" -c "$RUN/node-$n/server.properties" \
      --add-scram "SCRAM-SHA-512=[name=$SASL_USER,password=$SASL_PASSWORD]" \
      > "$RUN/node-$n/logs/format.log" 2>&1 &
    pids+=($!)
  done
  for n in "${NODES[@]}"; do
    wait "${pids[$((n - 1))]}" || { cat "$RUN/node-$n/logs/format.log" >&2; die "could not format node $n"; }
  done
  write_state
  for n in "${NODES[@]}"; do start_node "$n"; done
  wait_nodes "${NODES[@]}"
  load_state
  create_topics
  say "3 nodes up, topics created in $((SECONDS - t0)) s (Kafka $VERSION, run folder $RUN)"
  echo "PLAINTEXT $KAFKA_BOOTSTRAP"
  echo "SASL_SSL  $KAFKA_SASL_BOOTSTRAP (user $SASL_USER, SCRAM-SHA-512 or PLAIN; this machine's librdkafka: $KAFKA_SASL_MECHANISM; librdkafka properties in $KAFKA_SASL_PROPERTIES)"
}

stop_nodes() {  # N...: SIGTERM, a bounded wait, then SIGKILL
  local n pid end
  for n in "$@"; do
    pid=$(pid_of "$n")
    [[ -n $pid ]] || continue
    kill -CONT "$pid" 2>/dev/null || true
    kill -TERM "$pid" 2>/dev/null || true
  done
  end=$((SECONDS + ${KAFKA_STOP_TIMEOUT:-30}))
  for n in "$@"; do
    while alive "$n" && ((SECONDS < end)); do sleep 0.2; done
    if alive "$n"; then
      say "node $n did not stop within ${KAFKA_STOP_TIMEOUT:-30} s: SIGKILL"
      kill -KILL "$(pid_of "$n")" 2>/dev/null || true
    fi
    rm -f "$RUN/node-$n/pid"
  done
}

check_node() { [[ ${1:-} =~ ^[123]$ ]] || die "a node is 1, 2 or 3 (got '${1:-}')"; }

cmd_status() {
  load_state
  local n pid st
  for n in "${NODES[@]}"; do
    pid=$(pid_of "$n")
    if ! alive "$n"; then
      st=down
    elif [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) == T ]]; then
      st="paused (pid $pid)"
    elif kcat_ok "127.0.0.1:${PORT_PLAIN[$n]}"; then
      st="up (pid $pid, rss $(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$pid/status") MB)"
    else
      st="starting (pid $pid)"
    fi
    echo "node $n: $st, PLAINTEXT 127.0.0.1:${PORT_PLAIN[$n]}, SASL_SSL 127.0.0.1:${PORT_SASL[$n]}"
  done
  echo "PLAINTEXT $KAFKA_BOOTSTRAP"
  echo "SASL_SSL  $KAFKA_SASL_BOOTSTRAP"
}

# The node leading a partition, from the brokers' metadata (kcat).
cmd_leader() {
  load_state
  local topic=${1:?topic} part=${2:?partition}
  kcat -b "$KAFKA_BOOTSTRAP" -L -t "$topic" -J 2>/dev/null |
    python3 -c 'import json,sys
m = json.load(sys.stdin)
p = int(sys.argv[1])
print(next(q["leader"] for t in m["topics"] for q in t["partitions"] if q["partition"] == p))' "$part"
}

case ${1:-} in
  start) cmd_start ;;
  fetch) install_tools; fetch ;;
  stop)
    [[ -f $STATE ]] || { say "no cluster in $RUN"; exit 0; }
    load_state
    stop_nodes "${NODES[@]}"
    say "stopped" ;;
  kill)
    check_node "${2:-}"
    load_state
    pid=$(pid_of "$2")
    [[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null || die "node $2 is not running"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    rm -f "$RUN/node-$2/pid"
    say "node $2 killed (SIGKILL)" ;;
  pause | resume)
    check_node "${2:-}"
    load_state
    pid=$(pid_of "$2")
    [[ -n $pid ]] || die "node $2 is not running"
    [[ $1 == pause ]] && sig=STOP || sig=CONT
    kill -"$sig" "$pid"
    say "node $2 ${1}d (SIG$sig)" ;;
  restart)
    check_node "${2:-}"
    load_state
    start_node "$2"
    wait_nodes "$2"
    say "node $2 up again" ;;
  status) cmd_status ;;
  leader) shift; cmd_leader "$@" ;;
  env) load_state; cat "$STATE" ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2 ;;
esac
