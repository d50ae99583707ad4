#!/usr/bin/env bash
# Installs ClickHouse from Debian's packages (clickhouse-server, clickhouse-client: 18.16 in
# bookworm) and runs the server in the background on 127.0.0.1 for the integration tests. There is
# no systemd in the container and the package's init script needs its own user and paths, so this
# starts the binary directly with the config from infra/clickhouse/ (placeholders filled in) and
# keeps data, logs and the pid file under one state directory. Idempotent: when the HTTP port
# already answers /ping it only says so.
#
#   bash infra/clickhouse.sh          # install if missing, start, wait for SELECT version(), print CLICKHOUSE_URL
#   bash infra/clickhouse.sh stop     # stop the server this script started (pid file), nothing else
#   bash infra/clickhouse.sh status   # exit 0 when the HTTP port answers
#
# Environment: CLICKHOUSE_HTTP_PORT (default 8123), CLICKHOUSE_TCP_PORT (default 9000, native
# protocol for clickhouse-client); ANOMALY_SERVERS_DIR (default /tmp/anomaly-platform-servers) holds
# clickhouse/{config.xml,users.xml,data/,log/,clickhouse.pid}; ANOMALY_APT_UPDATED=1 skips
# `apt-get update` (infra/servers.sh runs it once for all packages).
set -euo pipefail

readonly HOST="127.0.0.1"
readonly HTTP_PORT="${CLICKHOUSE_HTTP_PORT:-8123}"
readonly TCP_PORT="${CLICKHOUSE_TCP_PORT:-9000}"
readonly STATE_DIR="${ANOMALY_SERVERS_DIR:-/tmp/anomaly-platform-servers}/clickhouse"
readonly PID_FILE="${STATE_DIR}/clickhouse.pid"
readonly OUT_FILE="${STATE_DIR}/log/stdout.log"
readonly URL="http://${HOST}:${HTTP_PORT}"
readonly START_TIMEOUT_S=60
readonly PACKAGES=(clickhouse-server clickhouse-client)

config_src="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/clickhouse"
readonly config_src

readonly SERVER_NAME="clickhouse"
# shellcheck source=infra/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_packages() {
  local missing=() pkg
  for pkg in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "${pkg}" 2>/dev/null | grep -q 'install ok installed' || missing+=("${pkg}")
  done
  ((${#missing[@]} == 0)) && return
  if [[ "${ANOMALY_APT_UPDATED:-0}" != 1 ]]; then
    log "apt-get update"
    as_root apt-get update -qq
  fi
  log "installing the Debian packages ${missing[*]}"
  # The package's postinst tries to start the service through invoke-rc.d; without an init system
  # that is refused, which is fine: this script starts the server itself.
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

answers() {
  [[ "$(curl -fsS --max-time 2 "${URL}/ping" 2>/dev/null)" == Ok.* ]]
}

server_version() {
  curl -fsS --max-time 5 --data-binary 'SELECT version()' "${URL}/"
}

write_config() {
  mkdir -p "${STATE_DIR}"/{data,tmp,user_files,format_schemas,log}
  sed -e "s|@STATE_DIR@|${STATE_DIR}|g" \
    -e "s|@HOST@|${HOST}|g" \
    -e "s|@HTTP_PORT@|${HTTP_PORT}|g" \
    -e "s|@TCP_PORT@|${TCP_PORT}|g" \
    "${config_src}/config.xml" >"${STATE_DIR}/config.xml"
  cp "${config_src}/users.xml" "${STATE_DIR}/users.xml"
}

start() {
  ensure_packages
  if answers; then
    log "already up at ${URL} (version $(server_version))"
    print_address
    return
  fi
  write_config
  log "starting clickhouse-server at ${URL} (data and logs under ${STATE_DIR})"
  # setsid: its own session, so the server outlives the shell (and the job) that started it.
  setsid nohup clickhouse-server --config-file="${STATE_DIR}/config.xml" >"${OUT_FILE}" 2>&1 </dev/null &
  local pid=$!
  echo "${pid}" >"${PID_FILE}"
  local deadline=$((SECONDS + START_TIMEOUT_S))
  until answers; do
    if ! kill -0 "${pid}" 2>/dev/null; then
      tail -n 30 "${OUT_FILE}" "${STATE_DIR}/log/clickhouse-server.err.log" >&2 2>/dev/null || true
      rm -f "${PID_FILE}"
      fail "clickhouse-server exited during start-up"
    fi
    if ((SECONDS >= deadline)); then
      tail -n 30 "${STATE_DIR}/log/clickhouse-server.err.log" >&2 2>/dev/null || true
      fail "no answer from ${URL}/ping after ${START_TIMEOUT_S}s"
    fi
    sleep 0.2
  done
  log "up: SELECT version() = $(server_version)"
  print_address
}

stop() {
  stop_started_server "${PID_FILE}" 30 answers "${URL}"
}

print_address() {
  echo "CLICKHOUSE_URL=${URL}"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status)
    if answers; then log "up at ${URL}"; print_address; else log "down at ${URL}"; exit 1; fi
    ;;
  *) fail "usage: $0 [start|stop|status]" ;;
esac
