#!/bin/sh
# Creates .venv-cookbook (ignored by git) with tinker-cookbook from PyPI, unmodified, and its
# dependencies with the math-rl extra (rl_loop grades with it): the Tinker SDK, transformers, datasets, and torch (the cookbook's recipes build tensors
# with it). PyTorch's CPU-only index is tried first (about 200 MB of torch); where it cannot be reached,
# PyPI's torch wheel brings the CUDA libraries (several GB, many minutes), which is why CI does not run
# this: test/tinker/cookbook-loops.sh is run by a person, and its last output is committed beside it.
# On Python 3.11 pip resolves tinker-cookbook 0.5.8 (0.6.x needs tml-renderers 0.4.1+, built for 3.12+).
set -eu
cd "$(dirname "$0")/../.."
python3 -m venv .venv-cookbook
pip=".venv-cookbook/bin/pip --disable-pip-version-check --quiet"
if curl -sf -o /dev/null --max-time 15 https://download.pytorch.org/whl/cpu/torch/; then
  $pip install torch --index-url https://download.pytorch.org/whl/cpu
fi
$pip install 'tinker-cookbook[math-rl]'
.venv-cookbook/bin/python -c "import tinker, tinker_cookbook, torch; print('tinker', tinker.__version__, '| tinker-cookbook', tinker_cookbook.__version__, '| torch', torch.__version__)"
