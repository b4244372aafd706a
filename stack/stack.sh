#!/usr/bin/env bash
# Local development/test stack for the crawler, without Docker:
#   Apache Kafka (KRaft, single combined node)  127.0.0.1:19092 (controller 19093)
#   Apicurio Registry, Confluent API (ccompat)  127.0.0.1:18081  base URL /apis/ccompat/v7
#   Redis (Debian redis-server)                 127.0.0.1:16379
#   S3Proxy (filesystem-nio2, bucket "crawl")   127.0.0.1:18080
#
# Usage: stack/stack.sh install|up|down|stop|restart|status|env|browser
#   install  download everything (apt + Maven Central) without starting anything
#   browser  install Debian's chromium if it is missing (the status-page test drives it)
#   up       start what is not already healthy, wait for health (idempotent)
#   down     stop only what this script started, remove those services' data
#   stop     stop only what this script started, keep their data (a later `up` resumes it)
#   restart  stop then up, keeping data: e.g. CRAWL_STACK_SERVICES=kafka ... restart bounces
#            just the broker (its topics, offsets and groups survive), waiting for health
#   status   one line per service: up/down, port, pid
#   env      shell `export` lines describing the stack
#
# Environment (all optional):
#   CRAWL_STACK_CACHE   download cache (default ~/.cache/crawl-stack; Maven also uses ~/.m2)
#   CRAWL_STACK_DIR     runtime data, logs, pidfiles (default <repo>/.stack)
#   CRAWL_KAFKA_PORT CRAWL_KAFKA_CONTROLLER_PORT CRAWL_REGISTRY_PORT CRAWL_REDIS_PORT CRAWL_S3_PORT
#   CRAWL_KAFKA_VERSION CRAWL_S3PROXY_VERSION CRAWL_APICURIO_VERSION   (pinned defaults below)
#   CRAWL_STACK_TIMEOUT seconds to wait for each service's health (default 120)
#   CRAWL_STACK_SERVICES  space-separated subset to act on (default: "kafka registry redis s3")
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${CRAWL_STACK_CACHE:-${HOME:-/root}/.cache/crawl-stack}"
STACK_DIR="${CRAWL_STACK_DIR:-$REPO/.stack}"
RUN_DIR="$STACK_DIR/run"
LOG_DIR="$STACK_DIR/logs"
DATA_DIR="$STACK_DIR/data"

HOST=127.0.0.1
KAFKA_PORT="${CRAWL_KAFKA_PORT:-19092}"
KAFKA_CONTROLLER_PORT="${CRAWL_KAFKA_CONTROLLER_PORT:-19093}"
REGISTRY_PORT="${CRAWL_REGISTRY_PORT:-18081}"
REDIS_PORT="${CRAWL_REDIS_PORT:-16379}"
S3_PORT="${CRAWL_S3_PORT:-18080}"

# Kafka 4.3.1: kafkajs 2.2.4 verified against it, and against 4.1.x and 4.4.0 (topics, idempotent + transactional produce,
# consumer groups, offset commits, describeConfigs, deleteTopics).
KAFKA_VERSION="${CRAWL_KAFKA_VERSION:-4.3.1}"
LOG4J_VERSION=2.24.3
S3PROXY_VERSION="${CRAWL_S3PROXY_VERSION:-4.1.0}"
# Apicurio 3.x jars are compiled for Java 21; 2.6.x runs on Java 17.
APICURIO_VERSION="${CRAWL_APICURIO_VERSION:-2.6.13.Final}"

S3_BUCKET=crawl
S3_ACCESS_KEY=crawl
S3_SECRET_KEY=crawlcrawl
REGISTRY_PATH=/apis/ccompat/v7
TIMEOUT="${CRAWL_STACK_TIMEOUT:-120}"
SERVICES="${CRAWL_STACK_SERVICES:-kafka registry redis s3}"

log() { printf '[stack] %s\n' "$*" >&2; }
die() { printf '[stack] ERROR: %s\n' "$*" >&2; exit 1; }

port_of() {
  case "$1" in
    kafka) echo "$KAFKA_PORT" ;; registry) echo "$REGISTRY_PORT" ;;
    redis) echo "$REDIS_PORT" ;; s3) echo "$S3_PORT" ;; *) die "unknown service $1" ;;
  esac
}
log_of() { echo "$LOG_DIR/$1.log"; }
pidfile_of() { echo "$RUN_DIR/$1.pid"; }

# ---------------------------------------------------------------- install ---------------------

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
APT_UPDATED=""
apt_install() {
  command -v apt-get >/dev/null || die "apt-get not found; install these yourself: $*"
  if [ -z "$APT_UPDATED" ]; then
    log "apt-get update"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    APT_UPDATED=1
  fi
  log "apt-get install $*"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}

ensure_tools() {
  local want=()
  command -v curl >/dev/null || want+=(curl ca-certificates)
  command -v flock >/dev/null || want+=(util-linux)
  if ! command -v java >/dev/null; then want+=(openjdk-17-jre-headless); fi
  if ! command -v mvn >/dev/null && ! all_maven_cached; then want+=(maven); fi
  if [[ " $SERVICES " == *" redis "* ]] && ! command -v redis-server >/dev/null; then
    want+=(redis-server redis-tools)
  fi
  # libdeflate: the WARC records' gzip members (lib/warc/libdeflate.ts; zlib without it).
  ldconfig -p 2>/dev/null | grep -q 'libdeflate\.so\.0' || want+=(libdeflate0)
  if [ "${#want[@]}" -gt 0 ]; then apt_install "${want[@]}"; fi
  if [[ " $SERVICES " == *" redis "* ]] && ! command -v redis-cli >/dev/null; then apt_install redis-tools; fi
  local jv
  jv="$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')"
  if [ -n "$jv" ] && [ "${jv%%.*}" -lt 17 ]; then die "Java 17+ is required (found $jv)"; fi
}

# Debian's Chromium for the status-page test (test/e2e/status-page.test.ts drives it with
# playwright-core, which downloads no browser of its own). Jest's global setup calls this before
# the integration tests, so `npm test` needs no step of its own for it.
CHROMIUM=/usr/bin/chromium
cmd_browser() {
  if [ -x "$CHROMIUM" ]; then log "chromium: $CHROMIUM"; return 0; fi
  apt_install chromium
  [ -x "$CHROMIUM" ] || die "apt-get installed chromium but $CHROMIUM is not there"
  log "chromium installed: $CHROMIUM"
}

KAFKA_HOME="$CACHE/kafka-$KAFKA_VERSION"
S3PROXY_HOME="$CACHE/s3proxy-$S3PROXY_VERSION"
APICURIO_HOME="$CACHE/apicurio-registry-$APICURIO_VERSION"

all_maven_cached() {
  [ -f "$KAFKA_HOME/.complete" ] && [ -f "$S3PROXY_HOME/.complete" ] && [ -f "$APICURIO_HOME/.complete" ]
}

# mvn_fetch HOME DEPENDENCY_XML: resolve into HOME/lib (all runtime jars) via a throwaway pom.
mvn_fetch() {
  local home="$1" deps="$2"
  mkdir -p "$home"
  cat >"$home/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.crawl.stack</groupId>
  <artifactId>$(basename "$home")</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
$deps
  </dependencies>
</project>
EOF
  rm -rf "$home/lib.tmp"
  if ! mvn -B -q -f "$home/pom.xml" dependency:copy-dependencies \
      -DoutputDirectory="$home/lib.tmp" -DincludeScope=runtime >"$home/mvn.log" 2>&1; then
    tail -n 30 "$home/mvn.log" >&2
    die "Maven could not resolve $(basename "$home") (see $home/mvn.log)"
  fi
  rm -rf "${home:?}/lib"
  mv "$home/lib.tmp" "$home/lib"
}

install_kafka() {
  [ -f "$KAFKA_HOME/.complete" ] && return 0
  log "downloading Apache Kafka $KAFKA_VERSION from Maven Central"
  mvn_fetch "$KAFKA_HOME" "
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>$LOG4J_VERSION</version></dependency>"
  touch "$KAFKA_HOME/.complete"
}

install_s3proxy() {
  [ -f "$S3PROXY_HOME/.complete" ] && return 0
  log "downloading S3Proxy $S3PROXY_VERSION from Maven Central"
  mvn_fetch "$S3PROXY_HOME" "
    <dependency><groupId>org.gaul</groupId><artifactId>s3proxy</artifactId><version>$S3PROXY_VERSION</version>
      <classifier>jar-with-dependencies</classifier>
      <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions></dependency>"
  touch "$S3PROXY_HOME/.complete"
}

install_apicurio() {
  [ -f "$APICURIO_HOME/.complete" ] && return 0
  log "downloading Apicurio Registry $APICURIO_VERSION from Maven Central"
  mvn_fetch "$APICURIO_HOME" "
    <dependency><groupId>io.apicurio</groupId><artifactId>apicurio-registry-app</artifactId><version>$APICURIO_VERSION</version>
      <type>tar.gz</type><classifier>all</classifier>
      <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions></dependency>"
  rm -rf "$APICURIO_HOME/app"
  mkdir -p "$APICURIO_HOME/app"
  tar -xzf "$APICURIO_HOME"/lib/*.tar.gz -C "$APICURIO_HOME/app"
  rm -f "$APICURIO_HOME"/lib/*.tar.gz
  touch "$APICURIO_HOME/.complete"
}

apicurio_cmd() {
  # 2.x ships a legacy "-runner.jar" + lib/; 3.x the fast-jar layout (quarkus-run.jar).
  local runner
  runner="$(ls "$APICURIO_HOME"/app/*-runner.jar 2>/dev/null | head -n1 || true)"
  if [ -z "$runner" ] && [ -f "$APICURIO_HOME/app/quarkus-run.jar" ]; then runner="$APICURIO_HOME/app/quarkus-run.jar"; fi
  [ -n "$runner" ] || die "no runnable jar in $APICURIO_HOME/app"
  echo "$runner"
}

cmd_install() {
  ensure_tools
  local s
  for s in $SERVICES; do
    case "$s" in
      kafka) install_kafka ;; registry) install_apicurio ;; s3) install_s3proxy ;; redis) ;;
      *) die "unknown service $s" ;;
    esac
  done
  log "installed (cache: $CACHE)"
}

# ---------------------------------------------------------------- health ----------------------

tcp_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# Kafka: send an ApiVersions v0 request (what kafka-broker-api-versions does first) and check
# that the broker answers with our correlation id and error_code 0.
kafka_healthy() {
  local out
  out="$(timeout 3 bash -c '
    exec 3<>"/dev/tcp/$0/$1" || exit 1
    printf "\x00\x00\x00\x0e\x00\x12\x00\x00\x00\x00\x00\x2a\x00\x04crwl" >&3
    head -c 10 <&3 | od -An -tx1' "$HOST" "$KAFKA_PORT" 2>/dev/null || true)"
  out="$(echo $out)"
  [[ "$out" == *"00 00 00 2a 00 00" ]]
}
registry_healthy() {
  [ "$(curl -s -o /dev/null -m 3 -w '%{http_code}' "http://$HOST:$REGISTRY_PORT$REGISTRY_PATH/subjects" 2>/dev/null || true)" = 200 ]
}
redis_healthy() { [ "$(timeout 3 redis-cli -h "$HOST" -p "$REDIS_PORT" ping 2>/dev/null || true)" = PONG ]; }
s3_healthy() {
  local code
  code="$(curl -s -o /dev/null -m 3 -w '%{http_code}' "http://$HOST:$S3_PORT/" 2>/dev/null || true)"
  [ -n "$code" ] && [ "$code" != 000 ]
}
healthy() { "${1}_healthy"; }

# pid of a process this script started and that is still alive, or nothing
our_pid() {
  local f pid
  f="$(pidfile_of "$1")"
  [ -f "$f" ] || return 0
  pid="$(tr -dc 0-9 <"$f")"
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -qaE "crawl.stack|redis" "/proc/$pid/cmdline" 2>/dev/null; then
    echo "$pid"
  fi
}

# ---------------------------------------------------------------- start -----------------------

java_opts_common() { echo "-Djava.awt.headless=true -XX:+ExitOnOutOfMemoryError -Dcrawl.stack=$1"; }

start_bg() { # start_bg NAME CMD... : detached from our session, output to the service log
  local name="$1"; shift
  setsid "$@" </dev/null >>"$(log_of "$name")" 2>&1 9>&- &
  echo $! >"$(pidfile_of "$name")"
}

start_kafka() {
  install_kafka
  local d="$DATA_DIR/kafka"
  mkdir -p "$d"
  cat >"$d/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$HOST:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://$HOST:$KAFKA_PORT,CONTROLLER://$HOST:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$HOST:$KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$d/logs
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
auto.create.topics.enable=false
delete.topic.enable=true
num.partitions=4
default.replication.factor=1
min.insync.replicas=1
message.max.bytes=8388608
replica.fetch.max.bytes=8388608
socket.request.max.bytes=104857600
group.initial.rebalance.delay.ms=0
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
log.segment.bytes=134217728
log.retention.hours=168
EOF
  cat >"$d/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $(log_of kafka)
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.state.name = state.change.logger
logger.state.level = WARN
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = WARN
EOF
  local jopts
  jopts="$(java_opts_common kafka) -Dlog4j2.configurationFile=$d/log4j2.properties"
  if [ ! -f "$d/logs/meta.properties" ]; then
    local cid
    cid="$(head -c16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
    # An id starting with '-' reads as an option to the tool's parser (1 in 64 ids; CI met one).
    # Kafka's own random-uuid never starts with '-' for that reason; any base64 letter is valid.
    case "$cid" in -*) cid="K${cid:1}" ;; esac
    # shellcheck disable=SC2086
    java -Xmx256m -XX:TieredStopAtLevel=1 $jopts -cp "$KAFKA_HOME/lib/*" kafka.tools.StorageTool \
      format -t "$cid" -c "$d/server.properties" </dev/null >>"$(log_of kafka)" 2>&1 9>&- \
      || { fail kafka "storage format failed"; }
  fi
  # shellcheck disable=SC2086
  start_bg kafka java ${CRAWL_KAFKA_HEAP_OPTS:--Xms256m -Xmx512m} -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
    -XX:InitiatingHeapOccupancyPercent=35 $jopts -cp "$KAFKA_HOME/lib/*" kafka.Kafka "$d/server.properties"
}

start_registry() {
  install_apicurio
  local runner
  runner="$(apicurio_cmd)"
  mkdir -p "$DATA_DIR/registry"
  # In-memory storage (the 2.x "app" distribution's default). No global compatibility rule:
  # Apicurio 2.x cannot let a subject-level NONE override a global rule (NONE deletes the
  # subject's rule), so the global default stays NONE; @kafkajs/confluent-schema-registry sets
  # BACKWARD on each subject it registers first (PUT /config/{subject}).
  # shellcheck disable=SC2046
  (cd "$DATA_DIR/registry" && start_bg registry java -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    $(java_opts_common registry) \
    -Dquarkus.http.host="$HOST" -Dquarkus.http.port="$REGISTRY_PORT" \
    -Dquarkus.log.console.color=false \
    -jar "$runner")
}

start_redis() {
  mkdir -p "$DATA_DIR/redis"
  rm -f "$(pidfile_of redis)"
  redis-server --bind "$HOST" --port "$REDIS_PORT" --save "" --appendonly no \
    --daemonize yes --pidfile "$(pidfile_of redis)" --logfile "$(log_of redis)" \
    --dir "$DATA_DIR/redis" --protected-mode yes </dev/null >>"$(log_of redis)" 2>&1 9>&- \
    || fail redis "redis-server did not start"
}

start_s3() {
  install_s3proxy
  local d="$DATA_DIR/s3"
  mkdir -p "$d/blobs/$S3_BUCKET"   # filesystem provider: a bucket is a directory
  cat >"$d/s3proxy.conf" <<EOF
s3proxy.endpoint=http://$HOST:$S3_PORT
s3proxy.authorization=aws-v2-or-v4
s3proxy.identity=$S3_ACCESS_KEY
s3proxy.credential=$S3_SECRET_KEY
jclouds.provider=filesystem-nio2
jclouds.filesystem.basedir=$d/blobs
EOF
  # shellcheck disable=SC2046
  start_bg s3 java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 $(java_opts_common s3) \
    -jar "$S3PROXY_HOME"/lib/s3proxy-*-jar-with-dependencies.jar --properties "$d/s3proxy.conf"
}

fail() { # fail SERVICE MESSAGE: show the log tail and exit non-zero naming the service
  local f
  f="$(log_of "$1")"
  if [ -f "$f" ]; then
    printf '[stack] ---- last lines of %s ----\n' "$f" >&2
    tail -n 40 "$f" >&2 || true
    printf '[stack] ----\n' >&2
  fi
  die "$1 failed: $2"
}

wait_healthy() { # wait_healthy SERVICE
  local s="$1" deadline pid
  deadline=$(( $(date +%s) + TIMEOUT ))
  while ! healthy "$s"; do
    pid="$(our_pid "$s")"
    if [ -z "$pid" ] && [ "$s" != redis ]; then fail "$s" "process exited before becoming healthy on port $(port_of "$s")"; fi
    if [ "$(date +%s)" -ge "$deadline" ]; then fail "$s" "not healthy on port $(port_of "$s") after ${TIMEOUT}s"; fi
    sleep 0.25
  done
}

where() {
  case "$1" in
    kafka) echo "kafka     $HOST:$KAFKA_PORT (controller $HOST:$KAFKA_CONTROLLER_PORT)" ;;
    registry) echo "registry  http://$HOST:$REGISTRY_PORT$REGISTRY_PATH" ;;
    redis) echo "redis     redis://$HOST:$REDIS_PORT" ;;
    s3) echo "s3        http://$HOST:$S3_PORT (bucket $S3_BUCKET)" ;;
  esac
}

with_lock() {
  mkdir -p "$STACK_DIR"
  exec 9>"$STACK_DIR/.lock"
  flock -w 600 9 || die "another stack.sh is holding $STACK_DIR/.lock"
}

cmd_up() {
  with_lock
  mkdir -p "$RUN_DIR" "$LOG_DIR" "$DATA_DIR"
  local s started=() t0
  t0=$(date +%s)
  ensure_tools
  for s in $SERVICES; do
    if healthy "$s"; then
      log "$s already up on port $(port_of "$s")$( [ -n "$(our_pid "$s")" ] || echo ' (not started by this script: left alone)')"
      continue
    fi
    if [ -z "$(our_pid "$s")" ]; then
      rm -f "$(pidfile_of "$s")"
      if tcp_open "$(port_of "$s")"; then
        fail "$s" "port $(port_of "$s") is in use by something that is not a healthy $s"
      fi
      log "starting $s"
      "start_$s"
    fi
    started+=("$s")
  done
  for s in "${started[@]}"; do wait_healthy "$s"; done
  if [[ " $SERVICES " == *" s3 "* ]] && [ -n "$(our_pid s3)" ]; then mkdir -p "$DATA_DIR/s3/blobs/$S3_BUCKET"; fi
  for s in $SERVICES; do log "up: $(where "$s")"; done
  log "stack ready in $(( $(date +%s) - t0 ))s (data: $STACK_DIR)"
}

stop_pid() { # stop_pid SERVICE PID
  local s="$1" pid="$2" _
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 120); do   # up to 30 s
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.25
  done
  log "$s (pid $pid) did not stop after SIGTERM; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  sleep 0.5
}

cmd_down() { # cmd_down [keep]: with "keep", the services' data stays for the next `up`
  with_lock
  local s pid
  for s in $SERVICES; do
    pid="$(our_pid "$s")"
    if [ -n "$pid" ]; then
      log "stopping $s (pid $pid)"
      stop_pid "$s" "$pid"
      rm -f "$(pidfile_of "$s")"
      if [ "${1:-}" != keep ]; then rm -rf "${DATA_DIR:?}/$s"; fi
    else
      rm -f "$(pidfile_of "$s")"
      if healthy "$s"; then log "$s is up on port $(port_of "$s") but was not started by this script: left alone"
      else log "$s not running"; fi
    fi
  done
}

cmd_status() {
  local s pid state
  printf '%-9s %-5s %-6s %s\n' SERVICE STATE PORT PID
  for s in $SERVICES; do
    pid="$(our_pid "$s")"
    if healthy "$s"; then state=up; else state=down; fi
    if [ -z "$pid" ]; then
      if [ "$state" = up ]; then pid="external"; else pid="-"; fi
    elif [ "$state" = down ]; then state="starting"
    fi
    printf '%-9s %-5s %-6s %s\n' "$s" "$state" "$(port_of "$s")" "$pid"
  done
}

cmd_env() {
  cat <<EOF
export CRAWL_KAFKA_BROKERS=$HOST:$KAFKA_PORT
export CRAWL_REGISTRY_URL=http://$HOST:$REGISTRY_PORT$REGISTRY_PATH
export CRAWL_REDIS_URL=redis://$HOST:$REDIS_PORT
export CRAWL_S3_ENDPOINT=http://$HOST:$S3_PORT
export CRAWL_S3_BUCKET=$S3_BUCKET
export CRAWL_S3_ACCESS_KEY=$S3_ACCESS_KEY
export CRAWL_S3_SECRET_KEY=$S3_SECRET_KEY
export CRAWL_S3_REGION=us-east-1
export CRAWL_S3_FORCE_PATH_STYLE=true
EOF
}

case "${1:-}" in
  install) cmd_install ;;
  up) cmd_up ;;
  down) cmd_down ;;
  stop) cmd_down keep ;;
  # Each verb takes the lock itself; the flock is on a descriptor of this shell, so release it
  # between the two (a subshell each).
  restart) (cmd_down keep) && (cmd_up) ;;
  status) cmd_status ;;
  env) cmd_env ;;
  browser) cmd_browser ;;
  *) echo "usage: $0 install|up|down|stop|restart|status|env|browser" >&2; exit 2 ;;
esac
