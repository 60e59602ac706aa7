#!/bin/sh
# Creates .venv-tinker (ignored by git) with the official Tinker SDK from PyPI, unmodified, at every
# release listed in test/tinker/sdk-versions: the newest (first line) installed as usual, with its
# dependencies (transformers, protobuf, zstandard, pyqwest, ...; no torch), and each older one with
# --no-deps under .venv-tinker/sdk/<version>, run with PYTHONPATH pointing there (python.sh). These
# releases list the same dependencies, which check_requirements.py confirms the newest's install meets.
# About 370 MB and a minute or two. .venv-tinker/ready lists the releases that installed; the Tinker
# wire tests skip their checks against a release that is not there, and say so. .ci/run runs this.
set -eu
cd "$(dirname "$0")/../.."
versions=$(grep -v '^#' test/tinker/sdk-versions)
newest=$(echo "$versions" | head -n1)
python3 -m venv .venv-tinker
rm -f .venv-tinker/ready
.venv-tinker/bin/pip install --quiet --disable-pip-version-check "tinker==$newest"
.venv-tinker/bin/python -c "import tinker, sys; sys.exit(tinker.__version__ != '$newest')"
echo "$newest" >> .venv-tinker/ready
status=0
for v in $(echo "$versions" | tail -n +2); do
  rm -rf ".venv-tinker/sdk/$v"
  if .venv-tinker/bin/pip install --quiet --disable-pip-version-check --no-deps --target ".venv-tinker/sdk/$v" "tinker==$v" &&
    .venv-tinker/bin/python test/tinker/check_requirements.py ".venv-tinker/sdk/$v" "$v"; then
    echo "$v" >> .venv-tinker/ready
  else
    rm -rf ".venv-tinker/sdk/$v"
    status=1
  fi
done
echo "Tinker SDK releases ready: $(tr '\n' ' ' < .venv-tinker/ready)"
exit $status
