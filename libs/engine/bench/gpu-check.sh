#!/usr/bin/env bash
# The engine on an NVIDIA GPU, checked and measured beside PyTorch in one run of under 10 minutes.
#
#   libs/engine/bench/gpu-check.sh pack        # here: builds .gpu-check/ (git-ignored, < 64 MiB): a Node
#                                              # binary, the built engine and its addon, the tfjs files it
#                                              # loads, the benchmark scripts and the reference values
#   bash .gpu-check/gpu-check.sh run           # on the GPU machine (no Node, no network needed): writes
#                                              # one JSON line per check to $OUT/gpu-check.jsonl (or
#                                              # .gpu-check/results/) and prints a summary
#
# What `run` does, each step under its own time limit:
#   1. nvidia-smi; which GPU candidates start: CUDA through the addon (cuBLAS opened at run time);
#      tfjs-node-gpu and WebGPU are reported as not bundled (they need npm packages this check does not
#      carry: tfjs-node-gpu's TensorFlow 2.9 for CUDA 11.2, and Dawn for WebGPU).
#   2. correctness (gpu-check.cjs): the reference transformer cases of the CPU tests, every product on the
#      GPU, at the CPU tests' 1e-4; a bf16 weight product on the GPU against the CPU's.
#   3. a Qwen2.5-0.5B-shaped random checkpoint (make-checkpoint.cjs), then the engine on the GPU: one LoRA
#      step (rank 8, all linears, 4 × 256) and sampling (batch 1, 8, 32; 64-token prompts, 64 new tokens);
#      the same LoRA step on the host's CPU cores for comparison.
#   4. PyTorch on the same GPU (torch_real_models.py --device cuda): the same LoRA step and sampling, and
#      the last-position logits of the same rows on both sides.
#   5. The cases of the CPU bench against transformers + PEFT (vs-peer.bench.js): the machine's limits on
#      the engine's threads, a Qwen2.5-1.5B-shaped checkpoint's LoRA step (1 × 256) and batch-1 sampling on
#      the engine, and peer_hf.py (transformers + PEFT, bf16) on the same GPU for every LoRA and sampling
#      case where the machine's Python has transformers and peft (else one line says they are missing).
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"

pack() {
  local repo out
  repo="$(cd "$here/../../.." && pwd)"
  out="$repo/.gpu-check"
  (cd "$repo" && npx tsc -b libs/engine/tsconfig.json && node libs/engine/native/build.js) || exit 1
  [ -f "$repo/libs/engine/native/build/engine.node" ] || { echo "gpu-check: the native addon did not build" >&2; exit 1; }
  rm -rf "$out" && mkdir -p "$out/engine/native/build" "$out/engine/src/__golden__/safetensors/tiny-qwen2" "$out/engine/bench" "$out/results"
  xz -T2 -6 -c "$(command -v node)" > "$out/node.xz"
  cp "$repo/libs/engine/package.json" "$out/engine/"
  cp -r "$repo/libs/engine/dist" "$out/engine/"
  cp "$repo/libs/engine/native/build/engine.node" "$out/engine/native/build/"
  cp "$repo/libs/engine/src/__golden__/transformer.json" "$out/engine/src/__golden__/"
  cp "$repo/libs/engine/src/__golden__/safetensors/tiny-qwen2/"tokenizer*.json "$out/engine/src/__golden__/safetensors/tiny-qwen2/"
  cp "$here"/{gpu-check.sh,gpu-check.cjs,make-checkpoint.cjs,real-models.engine.cjs,torch_real_models.py,torch_reference.py,peer_hf.py} "$out/engine/bench/"
  cp "$here/gpu-check.sh" "$out/"
  # Only the files Node loads of each package (tfjs-core's TypeScript sources and other bundles are 90 % of it).
  local nm="$repo/node_modules" dst="$out/engine/node_modules"
  for pkg in @tensorflow/tfjs-core @tensorflow/tfjs-backend-cpu @tensorflow/tfjs-backend-wasm; do
    mkdir -p "$dst/$pkg/dist"
    cp "$nm/$pkg/package.json" "$dst/$pkg/"
    cp "$nm/$pkg/dist/$(basename "$(node -p "require('$nm/$pkg/package.json').main")")" "$dst/$pkg/dist/"
  done
  cp "$nm/@tensorflow/tfjs-backend-wasm/dist/"*.wasm "$dst/@tensorflow/tfjs-backend-wasm/dist/"
  for pkg in seedrandom node-fetch whatwg-url tr46 webidl-conversions @huggingface/jinja @huggingface/tokenizers; do
    [ -d "$nm/$pkg" ] && mkdir -p "$dst/$(dirname "$pkg")" && cp -r "$nm/$pkg" "$dst/$pkg"
  done
  du -sh "$out"
  local bytes
  bytes=$(du -sb "$out" | cut -f1)
  [ "$bytes" -lt $((64 * 1024 * 1024)) ] || { echo "gpu-check: the bundle is $bytes bytes, over 64 MiB" >&2; exit 1; }
  echo "gpu-check: packed $out; on the GPU machine: bash .gpu-check/gpu-check.sh run"
}

run() {
  local root results node_bin log ckpt
  root="$here"
  [ -d "$root/engine" ] || root="$here/../../../.gpu-check"
  results="${OUT:-$root/results}"
  mkdir -p "$results"
  log="$results/gpu-check.jsonl"
  : > "$log"
  node_bin="$root/node"
  [ -x "$node_bin" ] || { xz -d -c "$root/node.xz" > "$node_bin" && chmod +x "$node_bin"; }
  # The engine finds its own package (and its addon) by name.
  mkdir -p "$root/engine/node_modules/@opentinker" && ln -sfn ../.. "$root/engine/node_modules/@opentinker/engine"
  local bench="$root/engine/bench"
  ckpt="${TMPDIR:-/tmp}/gpu-check-qwen2.5-0.5b"
  step() { # name, seconds, command...
    local name="$1" limit="$2"
    shift 2
    local t0=$SECONDS
    local line
    line=$(timeout "$limit" "$@" 2>"$results/$name.err" | tail -n 1)
    [ -n "$line" ] || line="{\"error\":\"no output (exit or timeout after $((SECONDS - t0)) s; see $name.err)\"}"
    printf '{"step":"%s","seconds":%d,"result":%s}\n' "$name" $((SECONDS - t0)) "$line" | tee -a "$log"
  }
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$results/nvidia-smi.txt" 2>&1
  printf '{"step":"machine","result":{"gpu":"%s","cpus":%s,"load":"%s"}}\n' "$(head -n1 "$results/nvidia-smi.txt")" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$log"
  printf '{"step":"candidates","result":{"cuda-addon":"measured below","tfjs-node-gpu":"not bundled (its installer downloads TensorFlow 2.9 for CUDA 11.2)","webgpu":"not bundled (needs the npm packages webgpu and @tensorflow/tfjs-backend-webgpu)"}}\n' | tee -a "$log"
  export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0}"
  step correctness 90 "$node_bin" "$bench/gpu-check.cjs"
  step checkpoint 120 "$node_bin" "$bench/make-checkpoint.cjs" --shape qwen2.5-0.5b --out "$ckpt"
  local threads
  threads=$(nproc)
  step engine-gpu-lora 180 env OPENTINKER_ENGINE_DEVICE=cuda "$node_bin" "$bench/real-models.engine.cjs" --model "$ckpt" --mode lora --batch 4 --seq 256 --steps 2 --warmup 1 --threads "$threads"
  for b in 1 8 32; do
    step "engine-gpu-sample-b$b" 120 env OPENTINKER_ENGINE_DEVICE=cuda "$node_bin" "$bench/real-models.engine.cjs" --model "$ckpt" --mode sample --batch "$b" --prompt 64 --new 64 --reps 1 --threads "$threads"
  done
  step engine-cpu-lora 180 env OPENTINKER_ENGINE_DEVICE=cpu "$node_bin" "$bench/real-models.engine.cjs" --model "$ckpt" --mode lora --batch 4 --seq 256 --steps 1 --warmup 1 --threads "$threads"
  step torch-gpu-lora 180 python3 "$bench/torch_real_models.py" --model "$ckpt" --device cuda --mode lora --batch 4 --seq 256 --micro 4 --steps 3 --warmup 1
  for b in 1 8 32; do
    step "torch-gpu-sample-b$b" 60 python3 "$bench/torch_real_models.py" --model "$ckpt" --device cuda --mode sample --batch "$b" --prompt 64 --new 64 --reps 3
  done
  # The same rows' last-position logits on both sides.
  python3 -c "import json,random; random.seed(5); json.dump([[random.randrange(300) for _ in range(32)] for _ in range(2)], open('$results/ids.json','w'))"
  step engine-gpu-logits 120 env OPENTINKER_ENGINE_DEVICE=cuda "$node_bin" "$bench/real-models.engine.cjs" --model "$ckpt" --mode logits --ids "$results/ids.json" --out "$results/engine-logits.json" --last-only
  step torch-gpu-logits 120 python3 "$bench/torch_real_models.py" --model "$ckpt" --device cuda --mode logits --ids "$results/ids.json" --out "$results/torch-logits.json" --last-only
  step logits-agree 30 python3 -c "
import json
a = json.load(open('$results/engine-logits.json'))['logits']; b = json.load(open('$results/torch-logits.json'))['logits']
fa = [x for r in a for p in r for x in p]; fb = [x for r in b for p in r for x in p]
d = max(abs(x - y) for x, y in zip(fa, fb)); s = max(abs(y) for y in fb)
print(json.dumps({'maxAbsDiff': d, 'maxAbsLogit': s, 'pass': d < 1e-3 * max(1, s)}))"
  # The CPU bench's cases (vs-peer.bench.js) on this machine.
  step engine-limits 60 "$node_bin" "$bench/real-models.engine.cjs" --mode limits --threads "$threads"
  local ckpt15="${TMPDIR:-/tmp}/gpu-check-qwen2.5-1.5b"
  step checkpoint-1.5b 240 "$node_bin" "$bench/make-checkpoint.cjs" --shape qwen2.5-1.5b --out "$ckpt15"
  step engine-gpu-lora-1.5b 240 env OPENTINKER_ENGINE_DEVICE=cuda "$node_bin" "$bench/real-models.engine.cjs" --model "$ckpt15" --mode lora --batch 1 --seq 256 --steps 2 --warmup 1 --threads "$threads"
  step engine-gpu-sample-1.5b-b1 120 env OPENTINKER_ENGINE_DEVICE=cuda "$node_bin" "$bench/real-models.engine.cjs" --model "$ckpt15" --mode sample --batch 1 --prompt 64 --new 32 --reps 1 --threads "$threads"
  if python3 -c "import transformers, peft" 2>/dev/null; then
    step peer-gpu-lora 180 python3 "$bench/peer_hf.py" --device cuda --model "$ckpt" --mode lora --batch 4 --seq 256 --micro 1 --steps 2 --warmup 1
    step peer-gpu-sample-b32 120 python3 "$bench/peer_hf.py" --device cuda --model "$ckpt" --mode sample --batch 32 --prompt 64 --new 64 --reps 2
    step peer-gpu-sample-b1 120 python3 "$bench/peer_hf.py" --device cuda --model "$ckpt" --mode sample --batch 1 --prompt 64 --new 64 --reps 2
    step peer-gpu-lora-1.5b 180 python3 "$bench/peer_hf.py" --device cuda --model "$ckpt15" --mode lora --batch 1 --seq 256 --micro 1 --steps 2 --warmup 1
    step peer-gpu-sample-1.5b-b1 120 python3 "$bench/peer_hf.py" --device cuda --model "$ckpt15" --mode sample --batch 1 --prompt 64 --new 32 --reps 2
  else
    printf '{"step":"peer","result":{"error":"transformers and peft are not installed for this python3: the transformers + PEFT cases are skipped"}}\n' | tee -a "$log"
  fi
  echo "gpu-check: results in $log"
}

case "${1:-}" in
  pack) pack ;;
  run) run ;;
  *) echo "usage: $0 pack | run" >&2; exit 2 ;;
esac
