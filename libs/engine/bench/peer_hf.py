#!/usr/bin/env python3
"""The peer a user would pick on a CPU: Hugging Face transformers + PEFT on PyTorch 2.x, bf16, run on the
same Hugging Face folder as the engine (bench/make-checkpoint.cjs), one measurement per process, one JSON
line on stdout (peak RSS from getrusage, the machine's load at start and end). vs-peer.bench.js runs it
beside the engine, alternating; install-peer.sh makes the virtualenv it runs in:

  bash libs/engine/bench/install-peer.sh
  OMP_NUM_THREADS=2 libs/engine/bench/.venv-peer/bin/python libs/engine/bench/peer_hf.py \\
      --model /tmp/opentinker-real-models/qwen2.5-0.5b --mode lora --batch 4 --seq 256 --micro 1

Modes (the cases of the engine's real-model bench, as the engine's side runs them):
  --mode lora    --batch B --seq T --micro M [--rank 8] [--alpha 16] [--steps S] [--warmup W]: the model in
                 bf16 (AutoModelForCausalLM, torch_dtype=bfloat16), PEFT LoRA r on all seven linears of every
                 layer (PEFT keeps the adapter in float32: autocast_adapter_dtype), B drawn normal(0, 0.02)
                 as the engine's bench does so both factors get gradients; mean next-token cross-entropy
                 (transformers' own loss, labels = ids) over random rows, micro-batches of M rows with
                 gradient accumulation, clip_grad_norm_(1.0), AdamW(lr 1e-4, wd 0.01). Reports tokens/s
                 (B*T over the median step) and the losses of every step.
  --mode sample  --batch B --prompt P --new N [--reps R]: model.generate with the KV cache, multinomial
                 sampling at temperature 1 (top_k 0, top_p 1: the full distribution, as the engine), exactly
                 N new tokens (min_new_tokens = N), under torch.inference_mode. Reports new tokens/s
                 (B*N over the median time) and the prefill's time (a 1-token generate).
  --mode loss    --ids FILE.json --adapter DIR --steps S [--lr 1e-3]: the loss curve of LoRA training, one
                 step a batch of the given rows, from the given PEFT adapter (check-training-vs-peer.cjs).
  --threads N (default 2: torch.set_num_threads; OMP_NUM_THREADS is set by the runner too)
"""
import argparse
import json
import os
import resource
import sys
import time


def loadavg():
    return [round(x, 2) for x in os.getloadavg()]


def peak_rss_mib():
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def median(xs):
    s = sorted(xs)
    return s[(len(s) - 1) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--mode", required=True, choices=["lora", "sample", "loss"])
    for k, v in dict(batch=1, seq=256, micro=1, rank=8, alpha=16, steps=2, warmup=1, prompt=64, new=64, reps=3, threads=2, seed=7).items():
        ap.add_argument("--" + k, type=int, default=v)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--ids", default=None)
    ap.add_argument("--adapter", default=None, help="a PEFT adapter folder to start from (check-training-vs-peer.cjs)")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"])
    ap.add_argument("--device", default="cpu", help="cpu, or cuda on a GPU machine (gpu-check.sh)")
    args = ap.parse_args()
    load_start = loadavg()

    import torch
    import transformers
    import peft

    torch.set_num_threads(args.threads)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    out = {
        "side": "transformers+peft",
        "mode": args.mode,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "peft": peft.__version__,
        "dtype": args.dtype,
        "threads": torch.get_num_threads(),
        "mkldnnBf16": bool(getattr(torch.backends.mkldnn, "is_available", lambda: False)()),
        "cpuCapability": getattr(torch.backends.cpu, "get_cpu_capability", lambda: None)(),
    }
    t0 = time.perf_counter()
    model = transformers.AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype, attn_implementation="sdpa")
    model.to(args.device)
    out["loadS"] = round(time.perf_counter() - t0, 3)
    out["device"] = args.device
    cfg = model.config
    tok_vocab = cfg.vocab_size
    tok_path = os.path.join(args.model, "tokenizer.json")
    if os.path.exists(tok_path):
        with open(tok_path) as f:
            tj = json.load(f)
        tok_vocab = min(cfg.vocab_size, len(tj["model"]["vocab"]) + len(tj.get("added_tokens", [])))
    gen = torch.Generator().manual_seed(args.seed)

    if args.mode == "sample":
        model.eval()
        b, p, n = args.batch, args.prompt, args.new
        prompts = torch.randint(0, tok_vocab, (b, p), generator=gen).to(args.device)

        def generate(ids, new):
            return model.generate(
                ids, attention_mask=torch.ones_like(ids), do_sample=True, temperature=args.temperature, top_k=0, top_p=1.0,
                max_new_tokens=new, min_new_tokens=new, pad_token_id=cfg.eos_token_id if isinstance(cfg.eos_token_id, int) else 0,
            )

        def sync():
            if args.device != "cpu":
                torch.cuda.synchronize()

        with torch.inference_mode():
            generate(prompts[:, :8], 2)  # warm-up: pages the weights in
            totals, prefills = [], []
            for _ in range(args.reps):
                s = time.perf_counter()
                generate(prompts, 1)
                sync()
                prefills.append(time.perf_counter() - s)
                s = time.perf_counter()
                res = generate(prompts, n)
                sync()
                totals.append(time.perf_counter() - s)
                assert res.shape == (b, p + n), res.shape
        total, prefill = median(totals), median(prefills)
        out.update(batch=b, prompt=p, new=n, totalS=round(total, 4), prefillS=round(prefill, 4), newTokensPerS=round(b * n / total, 2),
                   decodeTokensPerS=round(b * (n - 1) / max(1e-9, total - prefill), 2))
    else:
        lcfg = peft.LoraConfig(r=args.rank, lora_alpha=args.alpha, lora_dropout=0.0,
                               target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
        if args.adapter:
            model = peft.PeftModel.from_pretrained(model, args.adapter, is_trainable=True)
        else:
            model = peft.get_peft_model(model, lcfg)
            bgen = torch.Generator().manual_seed(args.seed + 1)
            with torch.no_grad():
                for name, p in model.named_parameters():
                    if "lora_B" in name:
                        p.copy_((torch.randn(p.shape, generator=bgen) * 0.02).to(p.device))
        params = [p for p in model.parameters() if p.requires_grad]
        out["trainable"] = sum(p.numel() for p in params)
        out["adapterDtype"] = str(params[0].dtype)
        model.train()
        if args.ids:
            with open(args.ids) as f:
                ids = torch.tensor(json.load(f), dtype=torch.long)
        else:
            ids = torch.randint(0, tok_vocab, (args.batch, args.seq), generator=gen)
        ids = ids.to(args.device)
        opt = torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
        micro = args.micro if args.mode == "lora" else ids.shape[0]
        b = ids.shape[0]

        def step():
            opt.zero_grad(set_to_none=True)
            total = 0.0
            for s in range(0, b, micro):
                chunk = ids[s:s + micro]
                loss = model(input_ids=chunk, labels=chunk).loss
                (loss * (chunk.shape[0] / b)).backward()
                total += loss.item() * chunk.shape[0] / b
            norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            return total, float(norm)

        losses, times = [], []
        warmup = args.warmup if args.mode == "lora" else 0
        for i in range(warmup + args.steps):
            s = time.perf_counter()
            loss, norm = step()
            if i >= warmup:
                times.append(time.perf_counter() - s)
                losses.append({"loss": loss, "gradNorm": norm})
        step_s = median(times)
        out.update(batch=b, seq=ids.shape[1], micro=micro, steps=len(times), stepS=round(step_s, 3), tokensPerS=round(b * ids.shape[1] / step_s, 2),
                   losses=losses)
    out.update(peakRssMib=peak_rss_mib(), loadStart=load_start, loadEnd=loadavg())
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
