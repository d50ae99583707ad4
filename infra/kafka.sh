#!/usr/bin/env bash
# Runs Apache Kafka for the integration tests: a single node in KRaft mode (broker and controller in
# one JVM), PLAINTEXT on 127.0.0.1:9092, controller on 127.0.0.1:9093. There is no Docker engine and
# only the package registries are reachable, so the broker comes from Kafka's jars on Maven Central:
# infra/kafka/pom.xml names them, Maven resolves them with their runtime dependencies into a cache
# directory once, and later runs start from the cache without Maven. Idempotent: when a broker
# already answers on the port it only says so.
#
#   bash infra/kafka.sh          # fetch jars if not cached, format storage once, start, wait until
#                                # the admin client gets a cluster description, print KAFKA_BROKERS
#   bash infra/kafka.sh stop     # stop the broker this script started (pid file), nothing else
#   bash infra/kafka.sh status   # exit 0 when the broker answers
#
# Environment: KAFKA_PORT (default 9092), KAFKA_CONTROLLER_PORT (default 9093), KAFKA_HEAP_OPTS
# (default "-Xms256m -Xmx512m": the machine is shared with the tests and the other servers);
# ANOMALY_SERVERS_DIR (default /tmp/anomaly-platform-servers) holds kafka/{server.properties,data/,
# logs/,kafka.pid}; ANOMALY_CACHE_DIR (default ~/.cache/anomaly-platform) holds kafka-libs/.
set -euo pipefail

readonly HOST="127.0.0.1"
readonly PORT="${KAFKA_PORT:-9092}"
readonly CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-9093}"
readonly HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
readonly STATE_DIR="${ANOMALY_SERVERS_DIR:-/tmp/anomaly-platform-servers}/kafka"
readonly DATA_DIR="${STATE_DIR}/data"
readonly LOGS_DIR="${STATE_DIR}/logs"
readonly PID_FILE="${STATE_DIR}/kafka.pid"
readonly OUT_FILE="${LOGS_DIR}/stdout.log"
readonly BOOTSTRAP="${HOST}:${PORT}"
readonly START_TIMEOUT_S=120

infra_src="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/kafka"
readonly infra_src
readonly POM="${infra_src}/pom.xml"
kafka_version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "${POM}")"
readonly kafka_version
# Keyed by the pom's content, so editing a version there fetches a fresh set instead of mixing jars.
pom_hash="$(sha256sum "${POM}" | cut -c1-12)"
readonly pom_hash
readonly LIBS_DIR="${ANOMALY_CACHE_DIR:-${HOME}/.cache/anomaly-platform}/kafka-libs/${kafka_version}-${pom_hash}"

readonly SERVER_NAME="kafka"
# shellcheck source=infra/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_command() {
  local cmd="$1" pkg="$2"
  command -v "${cmd}" >/dev/null && return
  if [[ "${ANOMALY_APT_UPDATED:-0}" != 1 ]]; then
    as_root apt-get update -qq
    export ANOMALY_APT_UPDATED=1
  fi
  log "installing the Debian package ${pkg} (for ${cmd})"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkg}" >/dev/null
}

port_open() {
  (exec 3<>"/dev/tcp/${HOST}/${PORT}") 2>/dev/null
}

# Kafka's own admin client, from the cached jars: exit 0 once the broker serves a cluster description.
probe() {
  local timeout_ms="$1"
  java -Xmx64m -XX:TieredStopAtLevel=1 -Dlog4j2.level=error -cp "${LIBS_DIR}/*" \
    "${infra_src}/BrokerProbe.java" "${BOOTSTRAP}" "${timeout_ms}"
}

ensure_libs() {
  if [[ -f "${LIBS_DIR}/.complete" ]]; then
    return
  fi
  ensure_command mvn maven
  log "resolving org.apache.kafka:kafka_2.13:${kafka_version} and its runtime dependencies from Maven Central into ${LIBS_DIR}"
  local staging="${LIBS_DIR}.partial"
  rm -rf "${staging}"
  mkdir -p "${staging}"
  mvn -q -B -Dstyle.color=never -f "${POM}" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="${staging}" >"${staging}.log" 2>&1 || {
    tail -n 40 "${staging}.log" >&2
    fail "Maven could not resolve the Kafka jars (full output in ${staging}.log)"
  }
  rm -f "${staging}.log"
  [[ -f "${staging}/kafka_2.13-${kafka_version}.jar" ]] || fail "Maven finished but ${staging} has no kafka_2.13-${kafka_version}.jar"
  rm -rf "${LIBS_DIR}"
  mv "${staging}" "${LIBS_DIR}"
  touch "${LIBS_DIR}/.complete"
  log "cached $(find "${LIBS_DIR}" -name '*.jar' | wc -l) jars ($(du -sh "${LIBS_DIR}" | cut -f1))"
}

write_config() {
  mkdir -p "${DATA_DIR}" "${LOGS_DIR}"
  sed -e "s|@HOST@|${HOST}|g" \
    -e "s|@PORT@|${PORT}|g" \
    -e "s|@CONTROLLER_PORT@|${CONTROLLER_PORT}|g" \
    -e "s|@LOG_DIR@|${DATA_DIR}|g" \
    "${infra_src}/server.properties" >"${STATE_DIR}/server.properties"
}

# KRaft needs its storage formatted with a cluster id once; a restart reuses the formatted data.
format_storage() {
  if [[ -f "${DATA_DIR}/meta.properties" ]]; then
    return
  fi
  local cluster_id
  cluster_id="$(java -cp "${LIBS_DIR}/*" kafka.tools.StorageTool random-uuid)"
  log "formatting ${DATA_DIR} (cluster id ${cluster_id})"
  java -Xmx256m -Dlog4j2.level=warn -cp "${LIBS_DIR}/*" kafka.tools.StorageTool format \
    --cluster-id "${cluster_id}" --config "${STATE_DIR}/server.properties" --ignore-formatted >/dev/null
}

start() {
  ensure_command java openjdk-17-jdk-headless
  if port_open; then
    ensure_libs
    local answer
    answer="$(probe 15000)" || fail "something listens on ${BOOTSTRAP} but does not answer as a Kafka broker"
    log "already up: ${answer}"
    print_address
    return
  fi
  ensure_libs
  write_config
  format_storage
  log "starting Kafka ${kafka_version} (KRaft, broker+controller) at ${BOOTSTRAP}, logs in ${LOGS_DIR}"
  # setsid: its own session, so the broker outlives the shell (and the job) that started it.
  # shellcheck disable=SC2086 # HEAP_OPTS is a list of JVM flags
  setsid nohup java ${HEAP_OPTS} \
    -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
    -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true \
    -Dkafka.logs.dir="${LOGS_DIR}" -Dlog4j2.configurationFile="${infra_src}/log4j2.properties" \
    -cp "${LIBS_DIR}/*" kafka.Kafka "${STATE_DIR}/server.properties" \
    >"${OUT_FILE}" 2>&1 </dev/null &
  local pid=$!
  echo "${pid}" >"${PID_FILE}"
  local deadline=$((SECONDS + START_TIMEOUT_S))
  until port_open; do
    if ! kill -0 "${pid}" 2>/dev/null; then
      tail -n 30 "${OUT_FILE}" "${LOGS_DIR}/server.log" >&2 2>/dev/null || true
      rm -f "${PID_FILE}"
      fail "the broker exited during start-up"
    fi
    ((SECONDS < deadline)) || fail "${BOOTSTRAP} not listening after ${START_TIMEOUT_S}s (see ${LOGS_DIR})"
    sleep 0.2
  done
  local answer
  answer="$(probe $(((deadline - SECONDS) * 1000)))" || {
    tail -n 30 "${LOGS_DIR}/server.log" >&2 2>/dev/null || true
    fail "the broker at ${BOOTSTRAP} listens but did not answer a cluster description"
  }
  log "up: ${answer}"
  print_address
}

stop() {
  stop_started_server "${PID_FILE}" 60 port_open "${BOOTSTRAP}"
}

print_address() {
  echo "KAFKA_BROKERS=${BOOTSTRAP}"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status)
    if port_open && [[ -f "${LIBS_DIR}/.complete" ]] && probe 5000 >/dev/null; then
      log "up at ${BOOTSTRAP}"
      print_address
    else
      log "down at ${BOOTSTRAP}"
      exit 1
    fi
    ;;
  *) fail "usage: $0 [start|stop|status]" ;;
esac
