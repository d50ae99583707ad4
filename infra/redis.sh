#!/usr/bin/env bash
# Installs Redis from Debian's package (redis-server) and runs it as a daemon on 127.0.0.1 for the
# integration tests: no persistence (no RDB snapshots, no AOF), state under one directory this
# script owns. Idempotent: when something already answers PING on the port it only says so.
#
#   bash infra/redis.sh          # install if missing, start, wait for PONG, print REDIS_URL
#   bash infra/redis.sh stop     # stop the server this script started (pid file), nothing else
#   bash infra/redis.sh status   # exit 0 when the port answers PING
#
# Environment: REDIS_PORT (default 6379); ANOMALY_SERVERS_DIR (default /tmp/anomaly-platform-servers)
# holds redis/{redis.pid,redis.log}; ANOMALY_APT_UPDATED=1 skips `apt-get update` (infra/servers.sh
# runs it once for all packages).
set -euo pipefail

readonly HOST="127.0.0.1"
readonly PORT="${REDIS_PORT:-6379}"
readonly STATE_DIR="${ANOMALY_SERVERS_DIR:-/tmp/anomaly-platform-servers}/redis"
readonly PID_FILE="${STATE_DIR}/redis.pid"
readonly LOG_FILE="${STATE_DIR}/redis.log"
readonly START_TIMEOUT_S=30

readonly SERVER_NAME="redis"
# shellcheck source=infra/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_package() {
  if dpkg-query -W -f='${Status}' redis-server 2>/dev/null | grep -q 'install ok installed'; then
    return
  fi
  if [[ "${ANOMALY_APT_UPDATED:-0}" != 1 ]]; then
    log "apt-get update"
    as_root apt-get update -qq
  fi
  log "installing the Debian package redis-server"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null
}

answers() {
  [[ "$(redis-cli -h "${HOST}" -p "${PORT}" ping 2>/dev/null)" == PONG ]]
}

start() {
  ensure_package
  if answers; then
    log "already up on ${HOST}:${PORT} ($(redis-server --version | awk '{print $3}' | sed 's/^v=/redis /'))"
    print_address
    return
  fi
  mkdir -p "${STATE_DIR}"
  log "starting redis-server on ${HOST}:${PORT} (log ${LOG_FILE})"
  # --save '' and --appendonly no: nothing touches the disk; tests own their keys by prefix.
  redis-server \
    --bind "${HOST}" --port "${PORT}" \
    --daemonize yes --pidfile "${PID_FILE}" --logfile "${LOG_FILE}" --dir "${STATE_DIR}" \
    --save '' --appendonly no \
    --protected-mode yes
  local deadline=$((SECONDS + START_TIMEOUT_S))
  until answers; do
    if ((SECONDS >= deadline)); then
      tail -n 20 "${LOG_FILE}" >&2 || true
      fail "no PONG from ${HOST}:${PORT} after ${START_TIMEOUT_S}s"
    fi
    sleep 0.1
  done
  log "up: $(redis-cli -h "${HOST}" -p "${PORT}" info server | tr -d '\r' | grep '^redis_version:')"
  print_address
}

stop() {
  stop_started_server "${PID_FILE}" 15 answers "${HOST}:${PORT}" redis-cli -h "${HOST}" -p "${PORT}" shutdown nosave
}

print_address() {
  echo "REDIS_URL=redis://${HOST}:${PORT}"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status)
    if answers; then log "up on ${HOST}:${PORT}"; print_address; else log "down on ${HOST}:${PORT}"; exit 1; fi
    ;;
  *) fail "usage: $0 [start|stop|status]" ;;
esac
