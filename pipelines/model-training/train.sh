#!/usr/bin/env bash
# Trains the model and exports the assets into packages/model/assets and the golden fixtures into
# packages/model/test/fixtures. Run setup.sh first. SCALE=0.1 for a quick run while developing.
# Public data (NAB's probationary prefixes) is read from DATASETS (default ../shared/datasets from
# the repository root, as the eval reads it); the run fails if it is absent, unless SYNTHETIC_ONLY=1.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# Fixed thread counts: BLAS and onnxruntime results depend on how work is split.
# No __pycache__ in the source tree (it is not in .gitignore).
export PYTHONDONTWRITEBYTECODE=1
export OPENBLAS_NUM_THREADS="${THREADS:-2}" OMP_NUM_THREADS="${THREADS:-2}" MKL_NUM_THREADS="${THREADS:-2}"
data_args=(--datasets "${DATASETS:-$root/../shared/datasets}")
if [ "${SYNTHETIC_ONLY:-0}" = "1" ]; then data_args=(--synthetic-only); fi
"$here/.venv/bin/python" "$here/tests/test_graphs.py"
"$here/.venv/bin/python" "$here/tests/test_public_data.py"
"$here/.venv/bin/python" "$here/src/train.py" \
  --out "${OUT:-$root/packages/model/assets}" \
  --fixtures "${FIXTURES:-$root/packages/model/test/fixtures}" \
  --scale "${SCALE:-1.0}" --seed "${SEED:-20261122}" --threads "${THREADS:-2}" "${data_args[@]}"
"$here/.venv/bin/python" "$here/src/model_card.py" "${OUT:-$root/packages/model/assets}" "${CARD:-$root/packages/model/MODEL_CARD.md}"
