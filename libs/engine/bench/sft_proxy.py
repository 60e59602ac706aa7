#!/usr/bin/env python3
"""PyTorch proxy of the SFT phase of libs/engine/bench/learn.bench.js (issues 4 and 5): why does the
engine's tiny-char learn addition so slowly per step?

Same model as the engine's `tiny-char` preset (Llama: RMSNorm, rotary positions with HF rotate-half,
SwiGLU, tied head; vocab 260, d 128, 4 layers, 4 heads, SwiGLU width 352), same data as the bench
(the engine's Prng — mulberry32 and Box–Muller — reimplemented, so the 2,000 training problems, the
200 held-out ones and the batch order are the bench's for a seed), same loss (mean NLL over the answer
and its stop token), same optimiser (AdamW with decay on matrices only, global-norm clipping at 1) and
the same warm-up. With `--init hf` the initial weights are the engine's `initWeights` value for value
(N(0, 0.02) drawn from Prng(seed) in weightSpecs order), so a run here and one of the bench start from
the same point: if torch learns as slowly, the cause is the recipe, not the engine's numerics.

Init modes:
  hf       N(0, initializer_range) everywhere (engine's initWeights before the fix; HF's _init_weights)
  torch    PyTorch module defaults: nn.Embedding N(0, 1), nn.Linear kaiming-uniform U(±1/sqrt(fan_in))
  scaled   N(0, 0.02), and o_proj / down_proj scaled by 1/sqrt(2·layers) (GPT-2)
  emb1     hf, but the embedding N(0, 1)
  linear   hf for the embedding, kaiming-uniform for linear layers

Prints one line per evaluation and a final JSON line. What it showed (libs/engine/README.md, "Why SFT was
slow"): with `--init hf` it learns as slowly as the engine at lr 1e-3 (the loss curves match), and lr 3e-4
lifts held-out accuracy at step 1,400 from a mean of 8.9% to 50.2% over five seeds.

Run: LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 libs/engine/bench/sft_proxy.py --init hf
"""
import argparse
import json
import math
import time

import torch
import torch.nn.functional as F

BOS, IM_START, EOS, PAD = 256, 257, 258, 259
CFG = dict(vocab=260, d=128, ff=352, layers=4, heads=4, eps=1e-5, theta=10000.0)


class Prng:
    """libs/engine/src/util/prng.ts: mulberry32 uniforms, Box–Muller normals, same seed mixing."""

    def __init__(self, seed):
        s = (int(seed) ^ 0x9E3779B9) & 0xFFFFFFFF
        s = ((s ^ (s >> 16)) * 0x85EBCA6B) & 0xFFFFFFFF
        s = ((s ^ (s >> 13)) * 0xC2B2AE35) & 0xFFFFFFFF
        self.state = (s ^ (s >> 16)) & 0xFFFFFFFF
        self.spare = None

    def uniform(self):
        self.state = (self.state + 0x6D2B79F5) & 0xFFFFFFFF
        t = self.state
        t = ((t ^ (t >> 15)) * (t | 1)) & 0xFFFFFFFF
        t = (t ^ ((t + (((t ^ (t >> 7)) * (t | 61)) & 0xFFFFFFFF)) & 0xFFFFFFFF)) & 0xFFFFFFFF
        return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 4294967296.0

    def normal(self):
        if self.spare is not None:
            s, self.spare = self.spare, None
            return s
        u = 0.0
        while u == 0.0:
            u = self.uniform()
        v = self.uniform()
        r = math.sqrt(-2.0 * math.log(u))
        self.spare = r * math.sin(2 * math.pi * v)
        return r * math.cos(2 * math.pi * v)


def weight_specs(tie):
    d, ff = CFG["d"], CFG["ff"]
    specs = [("model.embed_tokens.weight", (CFG["vocab"], d), "embedding")]
    for i in range(CFG["layers"]):
        p = f"model.layers.{i}."
        specs += [
            (p + "input_layernorm.weight", (d,), "norm"),
            (p + "self_attn.q_proj.weight", (d, d), "linear"),
            (p + "self_attn.k_proj.weight", (d, d), "linear"),
            (p + "self_attn.v_proj.weight", (d, d), "linear"),
            (p + "self_attn.o_proj.weight", (d, d), "linear"),
            (p + "post_attention_layernorm.weight", (d,), "norm"),
            (p + "mlp.gate_proj.weight", (ff, d), "linear"),
            (p + "mlp.up_proj.weight", (ff, d), "linear"),
            (p + "mlp.down_proj.weight", (d, ff), "linear"),
        ]
    specs.append(("model.norm.weight", (d,), "norm"))
    if not tie:
        specs.append(("lm_head.weight", (CFG["vocab"], d), "linear"))
    return specs


def init_weights(mode, seed, tie, std=0.02):
    rng = Prng(seed)
    gen = torch.Generator().manual_seed(seed)
    W = {}
    for name, shape, kind in weight_specs(tie):
        n = math.prod(shape)
        if kind == "norm":
            W[name] = torch.ones(shape)
            continue
        # Always draw the engine's normals so every mode sees the same Prng stream position.
        base = torch.tensor([rng.normal() * std for _ in range(n)], dtype=torch.float32).reshape(shape)
        kaiming = (torch.rand(shape, generator=gen) * 2 - 1) / math.sqrt(shape[1])
        resid = name.endswith("o_proj.weight") or name.endswith("down_proj.weight")
        if mode == "hf":
            W[name] = base
        elif mode == "torch":
            W[name] = base / std if kind == "embedding" else kaiming
        elif mode == "scaled":
            W[name] = base / math.sqrt(2 * CFG["layers"]) if resid else base
        elif mode == "emb1":
            W[name] = base / std if kind == "embedding" else base
        elif mode == "linear":
            W[name] = base if kind == "embedding" else kaiming
        else:
            raise SystemExit(f"unknown init {mode}")
    return {k: v.clone().requires_grad_(True) for k, v in W.items()}


def rms_norm(x, w):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + CFG["eps"]))


def rope_tables(T):
    hd = CFG["d"] // CFG["heads"]
    inv = 1.0 / (CFG["theta"] ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    f = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]
    emb = torch.cat([f, f], -1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], -1)


def forward(W, ids, tie):
    B, T = ids.shape
    H = CFG["heads"]
    hd = CFG["d"] // H
    cos, sin = rope_tables(T)
    x = W["model.embed_tokens.weight"][ids]
    for i in range(CFG["layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, W[p + "input_layernorm.weight"])
        q = (h @ W[p + "self_attn.q_proj.weight"].T).view(B, T, H, hd).transpose(1, 2)
        k = (h @ W[p + "self_attn.k_proj.weight"].T).view(B, T, H, hd).transpose(1, 2)
        v = (h @ W[p + "self_attn.v_proj.weight"].T).view(B, T, H, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
        o = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, CFG["d"])
        x = x + o @ W[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, W[p + "post_attention_layernorm.weight"])
        g = h @ W[p + "mlp.gate_proj.weight"].T
        u = h @ W[p + "mlp.up_proj.weight"].T
        x = x + (F.silu(g) * u) @ W[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, W["model.norm.weight"])
    head = W["model.embed_tokens.weight"] if tie else W["lm_head.weight"]
    return x @ head.T


def random_problem(rng):
    def operand():
        digits = 1 + math.floor(rng.uniform() * 3)
        lo = 0 if digits == 1 else 10 ** (digits - 1)
        return lo + math.floor(rng.uniform() * (10 ** digits - lo))

    a = operand()
    b = operand()
    return a, b


def prompt_ids(p):
    return [BOS] + list(f"{p[0]}+{p[1]}=".encode())


def answer_ids(p):
    return list(str(p[0] + p[1]).encode()) + [EOS]


@torch.no_grad()
def accuracy(W, problems, tie, max_new=6):
    right = 0
    by_len = {}
    for p in problems:
        by_len.setdefault(len(prompt_ids(p)), []).append(p)
    for group in by_len.values():
        ids = torch.tensor([prompt_ids(p) for p in group])
        done = torch.zeros(len(group), dtype=torch.bool)
        outs = [[] for _ in group]
        for _ in range(max_new):
            nxt = forward(W, ids, tie)[:, -1].argmax(-1)
            for j, t in enumerate(nxt.tolist()):
                if not done[j]:
                    if t == EOS:
                        done[j] = True
                    else:
                        outs[j].append(t)
            ids = torch.cat([ids, nxt[:, None]], 1)
        for p, o in zip(group, outs):
            text = bytes(t for t in o if t < 256).decode(errors="replace").split("\n")[0].strip()
            right += text == str(p[0] + p[1])
    return right / len(problems)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--init", default="hf")
    ap.add_argument("--std", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=1400)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--schedule", default="constant", choices=["constant", "cosine"])
    ap.add_argument("--wd", type=float, default=0.01)
    ap.add_argument("--beta2", type=float, default=0.999)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--untied", action="store_true")
    ap.add_argument("--loss-on", default="answer", choices=["answer", "all"])
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    tie = not a.untied

    rng = Prng(a.seed)
    seen, train, held = set(), [], []
    while len(train) < 2000:
        p = random_problem(rng)
        if p not in seen:
            seen.add(p)
            train.append(p)
    while len(held) < 200:
        p = random_problem(rng)
        if p not in seen:
            seen.add(p)
            held.append(p)
    probe = train[:200]

    W = init_weights(a.init, a.seed, tie, a.std)
    decay = [v for k, v in W.items() if "norm" not in k]
    no_decay = [v for k, v in W.items() if "norm" in k]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.wd}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, a.beta2), eps=1e-8)

    def lr_at(s):  # s: steps taken before this one; the bench's min(1, (s+1)/warmup) ramp
        w = min(1.0, (s + 1) / a.warmup) if a.warmup > 0 else 1.0
        if a.schedule == "cosine" and s >= a.warmup:
            w *= 0.5 * (1 + math.cos(math.pi * min(1.0, (s - a.warmup) / max(1, a.steps - a.warmup))))
        return a.lr * w

    order, log, loss_sum, loss_n = [], [], 0.0, 0
    t0 = time.time()
    for step in range(1, a.steps + 1):
        if len(order) < a.batch:
            order = list(range(len(train)))
            for i in range(len(order) - 1, 0, -1):
                j = math.floor(rng.uniform() * (i + 1))
                order[i], order[j] = order[j], order[i]
        picked, order = order[: a.batch], order[a.batch :]
        seqs = [prompt_ids(train[i]) + answer_ids(train[i]) for i in picked]
        T = max(map(len, seqs))
        ids = torch.full((len(seqs), T), PAD, dtype=torch.long)
        mask = torch.zeros(len(seqs), T)
        for b, i in enumerate(picked):
            s = seqs[b]
            ids[b, : len(s)] = torch.tensor(s)
            start = 1 if a.loss_on == "all" else len(prompt_ids(train[i]))
            mask[b, start : len(s)] = 1
        logits = forward(W, ids, tie)
        lp = torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None])[..., 0]
        m = mask[:, 1:]
        loss = -(lp * m).sum() / m.sum()
        for g in opt.param_groups:
            g["lr"] = lr_at(step - 1)
        opt.zero_grad()
        loss.backward()
        if a.clip > 0:
            torch.nn.utils.clip_grad_norm_(list(W.values()), a.clip)
        opt.step()
        loss_sum += loss.item()
        loss_n += 1
        if step % a.eval_every == 0 or step == a.steps:
            row = dict(step=step, loss=loss_sum / loss_n, train=accuracy(W, probe, tie), heldOut=accuracy(W, held, tie),
                       seconds=time.time() - t0)
            log.append(row)
            print(f"sft {step:5d}  loss {row['loss']:.4f}  train acc {row['train'] * 100:5.1f}%  "
                  f"held-out acc {row['heldOut'] * 100:5.1f}%  {row['seconds']:.1f} s", flush=True)
            loss_sum, loss_n = 0.0, 0
    print(json.dumps(dict(options=vars(a), log=log)))


if __name__ == "__main__":
    main()
