#!/usr/bin/env bash
# Creates .venv at the repository root with the vendor's Python SDK (azure-ai-anomalydetector
# 3.0.0b6), which the e2e tier uses to call the API the way a Python user of the retired Azure
# service would. Idempotent: when the pinned version is already installed it exits in a second.
set -euo pipefail

readonly PACKAGE="azure-ai-anomalydetector"
readonly VERSION="3.0.0b6"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${repo_root}/.venv"
python="${venv}/bin/python"

if [[ ! -x "${python}" ]]; then
  echo "python-client: creating ${venv}"
  python3 -m venv "${venv}"
fi

installed="$("${python}" -c "import importlib.metadata as m; print(m.version('${PACKAGE}'))" 2>/dev/null || true)"
if [[ "${installed}" == "${VERSION}" ]]; then
  echo "python-client: ${PACKAGE}==${VERSION} already installed in ${venv}"
  exit 0
fi

echo "python-client: installing ${PACKAGE}==${VERSION} into ${venv}"
"${python}" -m pip install --quiet --disable-pip-version-check "${PACKAGE}==${VERSION}"
"${python}" -c "import azure.ai.anomalydetector" # fail here, not in the tests, if the install is broken
echo "python-client: ${PACKAGE}==$("${python}" -c "import importlib.metadata as m; print(m.version('${PACKAGE}'))") ready"
