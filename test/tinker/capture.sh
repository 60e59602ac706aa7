#!/bin/sh
# Records test/fixtures/tinker/sdk-<version>.json for every release in sdk-versions: the official SDK
# driven through capture_sdk.py against the recording fake. Needs .venv-tinker (setup-sdk.sh); about 15 s
# a release (the session heartbeat comes after 10 s).
set -eu
cd "$(dirname "$0")/../.."
for v in $(grep -v '^#' test/tinker/sdk-versions); do
  sh test/tinker/python.sh "$v" test/tinker/capture_sdk.py "test/fixtures/tinker/sdk-$v.json"
done
