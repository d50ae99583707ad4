#!/usr/bin/env bash
# Optional Python environment for the evaluation's peer rows (npm run eval:peers): Microsoft's
# time-series-anomaly-detector and stumpy, pinned in requirements.txt (constraints.txt pins
# every transitive package as measured). Idempotent: an environment that already satisfies the
# pins is left as it is. Not run by npm install or CI.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${PEERS_VENV:-$here/../.peers-venv}"
python="${PEERS_PYTHON:-python3}"

if ! "$python" -c 'import sys; sys.exit(0 if (3, 10) <= sys.version_info[:2] <= (3, 12) else 1)'; then
  echo "peers setup: $python must be Python 3.10 to 3.12 (time-series-anomaly-detector 0.4.0 ships wheels for those)" >&2
  exit 1
fi

if [ -x "$venv/bin/python" ]; then
  echo "peers setup: using the existing environment $venv"
else
  echo "peers setup: creating $venv"
  "$python" -m venv "$venv"
fi

constraints=()
if [ -f "$here/constraints.txt" ]; then constraints=(-c "$here/constraints.txt"); fi

if "$venv/bin/python" - "$here/requirements.txt" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
for line in open(sys.argv[1]):
    line = line.split('#')[0].strip()
    if not line:
        continue
    name, pinned = line.split('==')
    if version(name) != pinned:
        sys.exit(1)
import anomaly_detector, stumpy  # noqa: F401,E401
PY
then
  echo "peers setup: the pinned packages are already installed; nothing to do"
else
  echo "peers setup: installing $(grep -v '^#' "$here/requirements.txt" | xargs) (torch brings its CUDA libraries: a few GB)"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt" "${constraints[@]}"
  echo "peers setup: installed"
fi
"$venv/bin/python" -c 'import anomaly_detector, stumpy, torch; print("peers setup: ready (torch", torch.__version__ + ", stumpy", stumpy.__version__ + ")")'
echo "peers setup: run the peers with: npm run eval:peers"
