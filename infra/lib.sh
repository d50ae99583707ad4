# Shared by the server scripts in infra/. Source it after setting SERVER_NAME (the log prefix).
# shellcheck shell=bash

log() { printf '%s: %s\n' "${SERVER_NAME}" "$*"; }
fail() { printf '%s: ERROR: %s\n' "${SERVER_NAME}" "$*" >&2; exit 1; }

as_root() {
  if [[ ${EUID} -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

# stop_started_server PID_FILE TIMEOUT_S ANSWERS_FN ADDRESS [GRACEFUL_CMD...]
# Stops only a server this script started (its pid file), never one found running otherwise:
# the graceful command if given (else SIGTERM), then SIGKILL after TIMEOUT_S seconds.
stop_started_server() {
  local pid_file="$1" timeout_s="$2" answers_fn="$3" address="$4"
  shift 4
  if [[ ! -s "${pid_file}" ]]; then
    if "${answers_fn}"; then
      log "${address} answers but was not started by this script (no ${pid_file}); leaving it"
    else
      log "not running"
    fi
    return
  fi
  local pid
  pid="$(cat "${pid_file}")"
  if kill -0 "${pid}" 2>/dev/null; then
    log "stopping pid ${pid}"
    if (($# > 0)); then
      "$@" >/dev/null 2>&1 || kill "${pid}" 2>/dev/null || true
    else
      kill "${pid}" 2>/dev/null || true
    fi
    local deadline=$((SECONDS + timeout_s))
    while kill -0 "${pid}" 2>/dev/null; do
      ((SECONDS < deadline)) || { log "still running after ${timeout_s}s: SIGKILL"; kill -9 "${pid}" 2>/dev/null || true; break; }
      sleep 0.2
    done
  fi
  rm -f "${pid_file}"
  log "stopped"
}
