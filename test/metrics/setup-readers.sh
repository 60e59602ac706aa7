#!/bin/sh
# Creates .venv-metrics (ignored by git) with the independent readers the metrics tests use:
# TensorBoard's EventAccumulator and wandb's own transaction-log reader (wandb.sdk.internal.datastore,
# which wandb 0.29 and later no longer ship in Python, hence the pin), and the wandb CLI whose
# `wandb sync` the W&B streaming test runs against its fake W&B server. .ci/run runs it.
set -eu
cd "$(dirname "$0")/../.."
python3 -m venv .venv-metrics
.venv-metrics/bin/pip install --quiet 'tensorboard>=2.14' 'wandb==0.28.2'
.venv-metrics/bin/python -c 'import tensorboard, wandb; from wandb.sdk.internal import datastore; print("readers ready: tensorboard", tensorboard.__version__, "wandb", wandb.__version__)'
