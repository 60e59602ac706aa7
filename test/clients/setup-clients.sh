#!/bin/sh
# Creates .venv-clients (ignored by git) with the official client libraries from PyPI that the client
# tests drive against a real server: OpenAI's Python SDK (test/clients/openai_sdk_checks.py, run by
# test/e2e/openai-sdk.e2e-spec.ts). Pinned, so a new SDK release changes CI only when the pin moves.
# .ci/run runs it; without the venv those tests skip and say so.
set -eu
cd "$(dirname "$0")/../.."
python3 -m venv .venv-clients
.venv-clients/bin/pip install --quiet 'openai==3.63.0'
.venv-clients/bin/python -c 'import openai; print("clients ready: openai", openai.__version__)'
