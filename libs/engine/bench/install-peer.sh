#!/usr/bin/env bash
# Installs the peer the engine is measured against: Hugging Face transformers + PEFT on PyTorch 2.x
# (PyPI's wheels: MKL and oneDNN, AVX-512 BF16 where the CPU has it), into an ignored virtualenv beside
# this script (libs/engine/bench/.venv-peer, about 5.6 GB: the torch wheel brings the CUDA libraries,
# which a CPU machine loads but never uses). Idempotent: an existing venv that imports the four
# packages is kept. Prints the versions.
#
#   bash libs/engine/bench/install-peer.sh [PYTHON]     (default: python3 on PATH, 3.10 or newer)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv-peer"
py="${1:-python3}"
check='import torch, transformers, peft, safetensors; print("torch", torch.__version__, "transformers", transformers.__version__, "peft", peft.__version__, "mkldnn", torch.backends.mkldnn.is_available())'
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" 2>/dev/null; then exit 0; fi
"$py" -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet torch transformers peft safetensors
"$venv/bin/python" -c "$check"
