#!/bin/sh
# Creates .venv-tinker (ignored by git) with the official Tinker SDK from PyPI, unmodified, at every
# release listed in test/tinker/sdk-versions: the newest (first line) installed as usual, with its
# dependencies (transformers, protobuf, zstandard, pyqwest, ...; no torch), and each older one with
# --no-deps under .venv-tinker/sdk/<version>, run with PYTHONPATH pointing there. These releases list
# the same dependencies, which check_requirements.py confirms the newest's install meets. About 360 MB,
# under a minute. .ci/run runs it; without it the Tinker wire tests skip their checks against the SDK.
set -eu
cd "$(dirname "$0")/../.."
versions=$(grep -v '^#' test/tinker/sdk-versions)
newest=$(echo "$versions" | head -n1)
python3 -m venv .venv-tinker
.venv-tinker/bin/pip install --quiet --disable-pip-version-check "tinker==$newest"
for v in $(echo "$versions" | tail -n +2); do
  rm -rf ".venv-tinker/sdk/$v"
  .venv-tinker/bin/pip install --quiet --disable-pip-version-check --no-deps --target ".venv-tinker/sdk/$v" "tinker==$v"
  .venv-tinker/bin/python test/tinker/check_requirements.py ".venv-tinker/sdk/$v" "$v"
done
.venv-tinker/bin/python -c 'import tinker; print("tinker SDK ready:", tinker.__version__)'
