#!/bin/sh
# Runs Python with one release of the Tinker SDK from .venv-tinker (setup-sdk.sh):
#   sh test/tinker/python.sh 0.25.0 test/tinker/capture_sdk.py
set -eu
root="$(cd "$(dirname "$0")/../.." && pwd)"
version="$1"
shift
if [ -d "$root/.venv-tinker/sdk/$version" ]; then
  PYTHONPATH="$root/.venv-tinker/sdk/$version${PYTHONPATH:+:$PYTHONPATH}"
  export PYTHONPATH
fi
exec "$root/.venv-tinker/bin/python" "$@"
