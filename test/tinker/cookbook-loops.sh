#!/bin/sh
# tinker-cookbook's two minimal loops, unmodified, against `opentinker serve` on this machine:
# recipes/sl_loop.py (SFT, cross_entropy; run twice, the second resuming from the first's saved state
# with its optimizer) and recipes/rl_loop.py (GRPO-style, loss_fn=importance_sampling). No Hub: the
# datasets and the model come from test/tinker/cookbook_fixture.py (local folders the recipes'
# `datasets.load_dataset` and `AutoTokenizer` find offline; a tiny random model under a name the
# cookbook's model table knows). The recipes change only through their command-line config.
#
# Needs .venv-cookbook (test/tinker/setup-cookbook.sh) and a build (npm run build). Prints what each
# loop logged per step; the last run's output is test/tinker/cookbook-loops.out. A few minutes on 2 cores.
# KEEP_WORK=1 keeps the temporary folder (the server's log, each loop's log and metrics).
set -eu
cd "$(dirname "$0")/../.."
root=$(pwd)
py="$root/.venv-cookbook/bin/python"
work=$(mktemp -d)
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  if [ -n "${KEEP_WORK:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT INT TERM

echo "$(date -u +%Y-%m-%dT%H:%MZ) $(uptime | sed 's/^.*load/load/')"
"$py" -c "import tinker, tinker_cookbook, torch; print('tinker', tinker.__version__, '| tinker-cookbook', tinker_cookbook.__version__, '| torch', torch.__version__)"
"$py" test/tinker/cookbook_fixture.py "$work"

key=otk_cookbook_admin_key_0123456789abcdef
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
OPENTINKER_HOME="$work/home" OPENTINKER_ADMIN_KEY="$key" OPENTINKER_HUB_CACHE_DIR="$work/hub" HF_HUB_OFFLINE=1 \
  OPENTINKER_LOG_LEVEL=warn node bin/opentinker.js serve --host 127.0.0.1 --port "$port" >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 60); do
  curl -sf "http://127.0.0.1:$port/v1/health" >/dev/null && break
  sleep 1
done
url="http://127.0.0.1:$port"

export TINKER_API_KEY="tml-$key" HF_HUB_OFFLINE=1 HF_HUB_CACHE="$work/hub" HF_DATASETS_OFFLINE=1 HF_DATASETS_CACHE="$work/datasets-cache"
model=Qwen/Qwen3-8B-Base
cd "$work/data"

show() { # the per-step metrics a loop logged: step and the named fields
  "$py" - "$@" <<'EOF'
import json, sys
path, fields = sys.argv[1], sys.argv[2:]
for line in open(path):
    m = json.loads(line)
    print("  step", m.get("step"), " ".join(f"{f}={m[f]:.4g}" for f in fields if isinstance(m.get(f), (int, float))))
EOF
}

echo "== sl_loop: 4 steps of 8 conversations, state saved at step 2"
"$py" -m tinker_cookbook.recipes.sl_loop base_url="$url" model_name="$model" log_path="$work/sl" \
  batch_size=8 max_steps=4 save_every=2 lora_rank=8 learning_rate=5e-3 max_length=128 >"$work/sl-1.log" 2>&1 || { tail -40 "$work/sl-1.log"; exit 1; }
show "$work/sl/metrics.jsonl" train_mean_nll learning_rate
# As if the run had stopped after step 2's save: keep that checkpoint record only (the recipe also
# records its final one, from which a rerun would have nothing left to do).
head -n 1 "$work/sl/checkpoints.jsonl" >"$work/sl/checkpoints.tmp" && mv "$work/sl/checkpoints.tmp" "$work/sl/checkpoints.jsonl"
mv "$work/sl/metrics.jsonl" "$work/sl/metrics-1.jsonl"
echo "== sl_loop again: resumes from step 2's state with its optimizer (create_training_client_from_state_with_optimizer), to step 12"
"$py" -m tinker_cookbook.recipes.sl_loop base_url="$url" model_name="$model" log_path="$work/sl" \
  batch_size=8 max_steps=12 save_every=0 lora_rank=8 learning_rate=5e-3 max_length=128 >"$work/sl-2.log" 2>&1 || { tail -40 "$work/sl-2.log"; exit 1; }
grep -h "Resuming from batch" "$work/sl-2.log" | sed 's/^.*Resuming/  Resuming/' || true
show "$work/sl/metrics.jsonl" train_mean_nll learning_rate
echo "== rl_loop: importance_sampling, 8 questions x 8 samples per step"
"$py" -m tinker_cookbook.recipes.rl_loop base_url="$url" model_name="$model" log_path="$work/rl" \
  batch_size=8 group_size=8 max_tokens=24 max_steps=8 save_every=0 lora_rank=8 learning_rate=1e-2 >"$work/rl.log" 2>&1 || { tail -40 "$work/rl.log"; exit 1; }
show "$work/rl/metrics.jsonl" reward/total grad_norm time/total
echo "  (grad_norm: optim_step's answer, on the steps that trained; steps skipped for equal rewards in every group: $(grep -c 'all advantages zero' "$work/rl.log" || true))"
echo "  step 0's time includes the wait for the rl session's runner: the sl sessions' runners hold the worker's CPU slots until their sessions expire (the recipes never call ServiceClient.close; tinker_session_yield_seconds)"
echo "== checkpoints the loops recorded"
cat "$work/sl/checkpoints.jsonl" "$work/rl/checkpoints.jsonl" | "$py" -c "import json, sys; [print('  ', json.loads(l).get('name'), json.loads(l).get('state_path') or '', json.loads(l).get('sampler_path') or '') for l in sys.stdin]"
echo "ok, $(uptime | sed 's/^.*load/load/')"
