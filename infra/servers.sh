#!/usr/bin/env bash
# Installs and starts the three servers the integration tier needs (Redis, ClickHouse, Kafka) on
# 127.0.0.1, waits until each one answers, and prints their addresses in the variables the tests
# read. `.ci/run` calls it before the tests; run it by hand before `npx vitest run --project
# integration`. Idempotent: with everything up, a second run only checks and takes a few seconds.
#
#   bash infra/servers.sh          # install what is missing (one apt-get update), start, wait, print addresses
#   bash infra/servers.sh stop     # stop the servers these scripts started
#   bash infra/servers.sh stop kafka redis   # only those (.ci/run stops the ones it started)
#   bash infra/servers.sh status   # exit 0 when all three answer
#
# Each server also has its own script (infra/redis.sh, infra/clickhouse.sh, infra/kafka.sh) with the
# same arguments; ports and directories are set there from the environment.
set -euo pipefail

infra="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly infra
readonly SCRIPTS=(redis clickhouse kafka)

log() { printf 'servers: %s\n' "$*"; }

as_root() {
  if [[ ${EUID} -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# One `apt-get update` and one `apt-get install` for everything missing, instead of one per script.
install_packages() {
  local missing=() pkg
  for pkg in redis-server clickhouse-server clickhouse-client; do
    installed "${pkg}" || missing+=("${pkg}")
  done
  command -v java >/dev/null && command -v javac >/dev/null || missing+=(openjdk-17-jdk-headless)
  command -v mvn >/dev/null || missing+=(maven)
  command -v curl >/dev/null || missing+=(curl)
  if ((${#missing[@]} > 0)); then
    log "apt-get update, then installing ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  export ANOMALY_APT_UPDATED=1
}

# Runs `<script> <action>` for every server; keeps going past a failure so one run reports all of
# them, and fails at the end if any failed.
each() {
  local action="$1" failed=() name started
  shift
  for name in "$@"; do
    started=${SECONDS}
    # Streamed as it happens (a cold Kafka start spends a while in Maven), kept for the summary.
    if bash "${infra}/${name}.sh" "${action}" | tee "${tmp}/${name}.out"; then
      log "${name}: ${action} ok ($((SECONDS - started))s)"
    else
      log "${name}: ${action} FAILED ($((SECONDS - started))s)"
      failed+=("${name}")
    fi
  done
  if ((${#failed[@]} > 0)); then
    log "failed: ${failed[*]}"
    return 1
  fi
}

addresses() {
  local name
  for name in "${SCRIPTS[@]}"; do
    grep -E '^[A-Z_]+=' "${tmp}/${name}.out" || true
  done
}

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

case "${1:-start}" in
  start)
    started=${SECONDS}
    install_packages
    each start "${SCRIPTS[@]}"
    log "all up in $((SECONDS - started))s; the integration tests read:"
    addresses | sed 's/^/  export /'
    ;;
  status)
    each status "${SCRIPTS[@]}"
    addresses | sed 's/^/  export /'
    ;;
  stop)
    shift
    # Kafka first: it is the one that takes a while to shut down cleanly.
    order=()
    for name in kafka clickhouse redis; do
      if (($# == 0)) || [[ " $* " == *" ${name} "* ]]; then order+=("${name}"); fi
    done
    for name in "$@"; do
      [[ " ${SCRIPTS[*]} " == *" ${name} "* ]] || { printf 'servers: unknown server %s (redis, clickhouse, kafka)\n' "${name}" >&2; exit 2; }
    done
    each stop "${order[@]}"
    ;;
  *)
    printf 'usage: %s [start|stop [NAME...]|status]\n' "$0" >&2
    exit 2
    ;;
esac
