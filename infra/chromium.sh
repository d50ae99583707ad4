#!/usr/bin/env bash
# Installs Debian's Chromium (/usr/bin/chromium), which the browser tests (test/browser/) drive
# through playwright-core; playwright never downloads a browser of its own here. Idempotent: when
# the browser is installed it only prints its version.
set -euo pipefail

readonly CHROMIUM=/usr/bin/chromium

if [[ ! -x "${CHROMIUM}" ]]; then
  sudo_cmd=()
  if [[ "$(id -u)" -ne 0 ]]; then sudo_cmd=(sudo); fi
  echo "chromium: installing Debian's chromium package"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq chromium
fi
echo "chromium: $("${CHROMIUM}" --version 2>/dev/null || echo "${CHROMIUM} present")"
