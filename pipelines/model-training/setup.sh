#!/usr/bin/env bash
# Creates the training pipeline's own virtual environment (.venv beside this script) with pinned
# packages from PyPI. Not part of npm install/start/test.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3.11}"
if [ ! -x "$here/.venv/bin/python" ]; then
  "$python" -m venv "$here/.venv"
fi
"$here/.venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
"$here/.venv/bin/python" -c "import numpy, onnx, onnxruntime; print('numpy', numpy.__version__, 'onnx', onnx.__version__, 'onnxruntime', onnxruntime.__version__)"
