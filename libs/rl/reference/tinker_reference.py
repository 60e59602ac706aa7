#!/usr/bin/env python3
"""Golden vectors for the Tinker losses (``src/losses/tinker.ts``), computed with PyTorch autograd.

Each loss is transcribed from the torch snippets of Tinker's documentation ("Loss Functions" and the
pages of each loss) in float64: per datum, per position, the loss ``-objective`` summed over positions,
its elementwise values, and ``d loss / d target_logprobs`` from ``torch.autograd`` (so stop-gradients,
``torch.minimum`` ties and ``torch.clamp`` bounds behave as torch does). Defaults follow what the README
records for each loss. It is written from those formulas, not from the TypeScript package.

Run with any Python that has torch and numpy, e.g.
    python3 -m venv /tmp/torch-venv && /tmp/torch-venv/bin/pip install torch numpy
    /tmp/torch-venv/bin/python libs/rl/reference/tinker_reference.py
It writes ``libs/rl/src/__golden__/tinker_losses.json``.
"""

import json
import os

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "__golden__", "tinker_losses.json")

DEFAULTS = {
    "ppo": {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2},
    "cispo": {"clip_low_threshold": 0.0, "clip_high_threshold": 4.0},
    "gspo": {"clip_low_threshold": 1 - 3e-4, "clip_high_threshold": 1 + 4e-4},
    "dro": {"beta": 0.1},
}


def thresholds(inputs, config, loss_fn):
    cfg = {**DEFAULTS.get(loss_fn, {}), **config}
    low = inputs.get("clip_low_threshold", torch.tensor(cfg.get("clip_low_threshold", 0.0), dtype=torch.float64))
    high = inputs.get("clip_high_threshold", torch.tensor(cfg.get("clip_high_threshold", 0.0), dtype=torch.float64))
    return low, high


def elementwise(loss_fn, target_logprobs, inputs, config):
    """-objective per position, as Tinker's documentation writes each loss."""
    if loss_fn == "cross_entropy":
        return -(target_logprobs * inputs["weights"])
    sampling_logprobs = inputs["logprobs"]
    advantages = inputs["advantages"]
    if loss_fn == "importance_sampling":
        prob_ratio = torch.exp(target_logprobs - sampling_logprobs)
        return -(prob_ratio * advantages)
    if loss_fn == "ppo":
        low, high = thresholds(inputs, config, loss_fn)
        prob_ratio = torch.exp(target_logprobs - sampling_logprobs)
        clipped_ratio = torch.clamp(prob_ratio, low, high)
        return -torch.minimum(prob_ratio * advantages, clipped_ratio * advantages)
    if loss_fn == "cispo":
        low, high = thresholds(inputs, config, loss_fn)
        prob_ratio = torch.exp(target_logprobs - sampling_logprobs)
        clipped_ratio = torch.clamp(prob_ratio, low, high)
        return -(clipped_ratio.detach() * target_logprobs * advantages)
    if loss_fn == "dro":
        beta = {**DEFAULTS["dro"], **config}["beta"]
        quadratic_term = (target_logprobs - sampling_logprobs) ** 2
        return -(target_logprobs * advantages - 0.5 * beta * quadratic_term)
    if loss_fn == "gspo":
        low, high = thresholds(inputs, config, loss_fn)
        in_ratio = inputs["sequence_ratio_mask"] != 0
        log_ratio = (target_logprobs.detach() - sampling_logprobs)[in_ratio].mean()
        ratio = torch.exp(log_ratio + target_logprobs - target_logprobs.detach())
        clipped_ratio = torch.clamp(ratio, low, high)
        return -torch.minimum(ratio * advantages, clipped_ratio * advantages)
    raise ValueError(loss_fn)


def case(name, loss_fn, logprobs, inputs, config=None):
    config = config or {}
    t = torch.tensor(logprobs, dtype=torch.float64, requires_grad=True)
    ins = {k: torch.tensor(v, dtype=torch.float64) for k, v in inputs.items()}
    el = elementwise(loss_fn, t, ins, config)
    loss = el.sum()
    (grad,) = torch.autograd.grad(loss, t)
    return {
        "name": name,
        "loss_fn": loss_fn,
        "config": config,
        "logprobs": list(logprobs),
        "inputs": {k: list(v) for k, v in inputs.items()},
        "loss": loss.item(),
        "elementwise": el.detach().tolist(),
        "grad": grad.tolist(),
    }


def main():
    rng = np.random.default_rng(26)
    n = 12
    cases = []

    def rl_datum(spread=0.6, prompt=3):
        pi = -rng.uniform(0.05, 4.0, n)
        q = pi - rng.normal(0, spread, n)
        adv = rng.normal(0, 1.0, n)
        adv[:prompt] = 0.0  # prompt positions: no advantage (the cookbook's layout)
        q[:prompt] = 0.0
        return pi, q, adv

    weights = (rng.uniform(0, 1, n) > 0.3).astype(float)
    pi = -rng.uniform(0.05, 5.0, n)
    cases.append(case("cross_entropy weights", "cross_entropy", pi, {"weights": weights * rng.uniform(0.5, 2, n)}))
    for loss_fn in ["importance_sampling", "ppo", "cispo", "dro", "gspo"]:
        for k, spread in enumerate([0.05, 0.6, 1.5]):
            pi, q, adv = rl_datum(spread)
            inputs = {"logprobs": q, "advantages": adv}
            if loss_fn == "gspo":
                inputs["sequence_ratio_mask"] = np.r_[np.zeros(3), np.ones(n - 3)]
            cases.append(case(f"{loss_fn} defaults spread {spread}", loss_fn, pi, inputs))
    pi, q, adv = rl_datum(0.8)
    cases.append(case("ppo tight clip", "ppo", pi, {"logprobs": q, "advantages": adv}, {"clip_low_threshold": 0.9, "clip_high_threshold": 1.1}))
    cases.append(case("ppo wide asymmetric clip", "ppo", pi, {"logprobs": q, "advantages": adv}, {"clip_low_threshold": 0.5, "clip_high_threshold": 1.28}))
    cases.append(case("cispo two-sided clip", "cispo", pi, {"logprobs": q, "advantages": adv}, {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}))
    cases.append(case("dro beta 0.05", "dro", pi, {"logprobs": q, "advantages": adv}, {"beta": 0.05}))
    cases.append(
        case(
            "ppo per-token thresholds",
            "ppo",
            pi,
            {"logprobs": q, "advantages": adv, "clip_low_threshold": rng.uniform(0.6, 0.95, n), "clip_high_threshold": rng.uniform(1.05, 1.4, n)},
        )
    )
    # Ties: a ratio exactly 1 sits inside any clip, so both branches of min are equal (torch splits the gradient).
    q_eq = pi.copy()
    cases.append(case("ppo ratio exactly 1", "ppo", pi, {"logprobs": q_eq, "advantages": adv}))
    for low, high, label in [(0.8, 1.2, "wide"), (0.999, 1.001, "tight")]:
        pi, q, adv = rl_datum(0.3)
        mask = (rng.uniform(0, 1, n) > 0.4).astype(float)
        mask[0] = 1.0
        cases.append(
            case(
                f"gspo holes in the mask, {label} clip",
                "gspo",
                pi,
                {"logprobs": q, "advantages": adv, "sequence_ratio_mask": mask},
                {"clip_low_threshold": low, "clip_high_threshold": high},
            )
        )
    with open(OUT, "w") as f:
        json.dump({"generator": "libs/rl/reference/tinker_reference.py", "torch": torch.__version__, "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
