#!/usr/bin/env python3
"""Independent NumPy reference for the parts of @opentinker/rl that no verl-produced vector covers.

The verl functions the package follows (advantage estimators, policy losses, ``agg_loss``, KL, value
loss, entropy, masked statistics) are checked against vectors produced by running verl's own code,
in ``../fixtures/verl`` (see the README there); they are not transcribed here. This file keeps the
rest, transcribed by hand (torch replaced by NumPy, float64 throughout):

- verl's ``compute_data_metrics`` (``verl/trainer/ppo/metric_utils.py``);
- verl's DAPO recipe: the dynamic sampling filter and the overlong reward shaping;
- the SFT cross-entropy (``logprobs_from_logits`` + ``agg_loss``) with its gradients;
- OpenTinker's ``compute_grpo_per_step_advantage`` (not a verl function).

It is written from those sources, not from the TypeScript package, and only produces the golden files in
``../src/__golden__``.

Places where verl raises or produces NaN/Inf are marked ``# GUARD``: the TypeScript package defines a
finite result there and this reference implements the same documented definition so that it can be
checked.

Gradients are central finite differences of the loss in float64, each computed with two step sizes and
rejected if they disagree (a kink inside the stencil).

Run: ``python3 libs/rl/reference/verl_reference.py`` (numpy 2.x; writes ``libs/rl/src/__golden__/*.json``).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict

import numpy as np

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "__golden__")


# --------------------------------------------------------------------------------------------
# verl.utils.torch_functional
# --------------------------------------------------------------------------------------------


def masked_sum(values, mask, axis=None):
    valid_values = np.where(mask.astype(bool), values, 0.0)
    return (valid_values * mask).sum(axis=axis)


def masked_mean(values, mask, axis=None):
    s = masked_sum(values, mask, axis)
    return s / (mask.sum(axis=axis) + 1e-8)


def logsumexp(logits, axis=-1):
    m = np.max(logits, axis=axis, keepdims=True)
    return (m + np.log(np.sum(np.exp(logits - m), axis=axis, keepdims=True))).squeeze(axis)


def logprobs_from_logits(logits, labels):
    logits_labels = np.take_along_axis(logits, labels[..., None], axis=-1)[..., 0]
    return logits_labels - logsumexp(logits)


def torch_std(x):
    """torch.std: unbiased (n - 1)."""
    x = np.asarray(x, dtype=np.float64)
    return float(np.sqrt(np.sum((x - x.mean()) ** 2) / (len(x) - 1)))


# --------------------------------------------------------------------------------------------
# verl core_algos: GRPO (the fallback of per-step GRPO) and agg_loss (the SFT loss)
# --------------------------------------------------------------------------------------------


def compute_grpo_outcome_advantage(token_level_rewards, response_mask, index, epsilon=1e-6, norm_adv_by_std_in_grpo=True):
    scores = token_level_rewards.sum(axis=-1).copy()
    id2score = defaultdict(list)
    id2mean, id2std = {}, {}
    bsz = scores.shape[0]
    for i in range(bsz):
        id2score[index[i]].append(scores[i])
    for idx in id2score:
        if len(id2score[idx]) == 1:
            id2mean[idx] = 0.0
            id2std[idx] = 1.0
        elif len(id2score[idx]) > 1:
            id2mean[idx] = float(np.mean(id2score[idx]))
            id2std[idx] = torch_std(id2score[idx])
    for i in range(bsz):
        if norm_adv_by_std_in_grpo:
            scores[i] = (scores[i] - id2mean[index[i]]) / (id2std[index[i]] + epsilon)
        else:
            scores[i] = scores[i] - id2mean[index[i]]
    scores = scores[:, None] * response_mask
    return scores, scores


def agg_loss(loss_mat, loss_mask, loss_agg_mode):
    """verl ``agg_loss`` without the global-batch arguments (the modes the SFT goldens use)."""
    if loss_agg_mode == "token-mean":
        batch_num_tokens = loss_mask.sum()
        if batch_num_tokens == 0:  # GUARD: 0/0 -> 0
            return 0.0
        return float(masked_sum(loss_mat, loss_mask) / batch_num_tokens)
    seq_tokens = np.sum(loss_mask, axis=-1)
    seq_losses = np.sum(np.where(loss_mask.astype(bool), loss_mat, 0.0) * loss_mask, axis=-1)
    if loss_agg_mode == "seq-mean-token-mean":
        seq_losses = seq_losses / (seq_tokens + 1e-8)
    elif loss_agg_mode != "seq-mean-token-sum":
        raise ValueError(loss_agg_mode)
    seq_mask = (seq_tokens > 0).astype(np.float64)
    global_batch_size = seq_mask.sum()
    if global_batch_size == 0:  # GUARD
        return 0.0
    return float(masked_sum(seq_losses, seq_mask) / global_batch_size)


# OpenTinker: opentinker/.../core_algos_per_step.py (compute_grpo_per_step_advantage)
def compute_turn_boundaries(response_mask):
    out = []
    for i in range(response_mask.shape[0]):
        mask = response_mask[i]
        boundaries, in_turn, start = [], False, 0
        for j, val in enumerate(mask):
            if val == 1 and not in_turn:
                in_turn, start = True, j
            elif val == 0 and in_turn:
                in_turn = False
                boundaries.append((start, j))
        if in_turn:
            boundaries.append((start, len(mask)))
        out.append(boundaries)
    return out


def compute_cumulative_returns(turn_scores, gamma=1.0):
    returns = [0.0] * len(turn_scores)
    cumulative = 0.0
    for t in reversed(range(len(turn_scores))):
        cumulative = turn_scores[t] + gamma * cumulative
        returns[t] = cumulative
    return returns


def compute_grpo_per_step_advantage(token_level_rewards, response_mask, index, turn_scores=None, gamma=1.0, epsilon=1e-6, norm_adv_by_std_in_grpo=True):
    batch_size = token_level_rewards.shape[0]
    has_valid = turn_scores is not None and len(turn_scores) == batch_size and any(len(ts) > 0 for ts in turn_scores)
    if not has_valid:
        return compute_grpo_outcome_advantage(token_level_rewards, response_mask, index, epsilon, norm_adv_by_std_in_grpo)
    turn_boundaries = compute_turn_boundaries(response_mask)
    all_returns = []
    for i in range(batch_size):
        ts = turn_scores[i]
        if len(ts) > 0:
            all_returns.append(compute_cumulative_returns(list(ts), gamma))
        else:
            all_returns.append([float((token_level_rewards[i] * response_mask[i]).sum())])
    id2returns = defaultdict(list)
    for i in range(batch_size):
        id2returns[index[i]].append(all_returns[i][0] if all_returns[i] else 0.0)
    id2mean, id2std = {}, {}
    for idx, rs in id2returns.items():
        if len(rs) == 1:
            id2mean[idx], id2std[idx] = 0.0, 1.0
        else:
            id2mean[idx], id2std[idx] = float(np.mean(rs)), torch_std(rs)
    advantages = np.zeros_like(token_level_rewards)
    for i in range(batch_size):
        mean, std = id2mean[index[i]], id2std[index[i]]
        returns = all_returns[i]
        for t, (start, end) in enumerate(turn_boundaries[i]):
            r = returns[t] if t < len(returns) else (returns[-1] if returns else 0.0)
            adv = (r - mean) / (std + epsilon) if norm_adv_by_std_in_grpo else r - mean
            advantages[i, start:end] = adv
    advantages = advantages * response_mask
    return advantages, advantages


# --------------------------------------------------------------------------------------------
# metrics and DAPO utilities
# --------------------------------------------------------------------------------------------


def _stats(prefix, x):
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:  # GUARD: torch.mean of an empty tensor is NaN
        return {f"{prefix}/mean": 0.0, f"{prefix}/max": 0.0, f"{prefix}/min": 0.0}
    return {f"{prefix}/mean": float(x.mean()), f"{prefix}/max": float(x.max()), f"{prefix}/min": float(x.min())}


def _std(x):
    x = np.asarray(x, dtype=np.float64)
    return 0.0 if x.size < 2 else torch_std(x)  # GUARD for n < 2


def compute_data_metrics(token_level_scores, token_level_rewards, advantages, returns, response_mask, values=None, prompt_lengths=None, max_prompt_length=None):
    sequence_score = token_level_scores.sum(-1)
    sequence_reward = token_level_rewards.sum(-1)
    max_response_length = response_mask.shape[-1]
    response_length = response_mask.sum(-1)
    aborted = response_length == 0
    non_aborted = ~aborted
    rm = response_mask.astype(bool)
    valid_adv = advantages[rm]
    valid_returns = returns[rm]
    m = {}
    m.update(_stats("critic/score", sequence_score[non_aborted]))
    m["critic/score/std"] = _std(sequence_score[non_aborted])
    m.update(_stats("critic/rewards", sequence_reward[non_aborted]))
    m["critic/rewards/std"] = _std(sequence_reward[non_aborted])
    m.update(_stats("critic/advantages", valid_adv))
    m.update(_stats("critic/returns", valid_returns))
    if values is not None:
        valid_values = values[rm]
        m.update(_stats("critic/values", valid_values))
        if valid_returns.size >= 2:
            return_diff_var = np.var(valid_returns - valid_values, ddof=1)
            return_var = np.var(valid_returns, ddof=1)
            m["critic/vf_explained_var"] = float(1.0 - return_diff_var / (return_var + 1e-5))
        else:
            m["critic/vf_explained_var"] = 0.0  # GUARD
    m.update(_stats("response_length", response_length))
    m["response_length/clip_ratio"] = float(np.mean(response_length == max_response_length))
    m["response/aborted_ratio"] = float(np.mean(aborted))
    m.update(_stats("response_length_non_aborted", response_length[non_aborted]))
    m["response_length_non_aborted/clip_ratio"] = float(np.mean(response_length[non_aborted] == max_response_length)) if non_aborted.any() else 0.0
    if prompt_lengths is not None:
        pl = np.asarray(prompt_lengths, dtype=np.float64)
        m.update(_stats("prompt_length", pl))
        m["prompt_length/clip_ratio"] = float(np.mean(pl == max_prompt_length))
    return m


def dapo_filter_groups(uids, metric_vals):
    """verl recipe/dapo/dapo_ray_trainer.py dynamic sampling (filter_groups)."""
    prompt_uid2metric_vals = defaultdict(list)
    for uid, v in zip(uids, metric_vals):
        prompt_uid2metric_vals[uid].append(v)
    prompt_uid2metric_std = {uid: float(np.std(v)) for uid, v in prompt_uid2metric_vals.items()}
    kept_prompt_uids = [uid for uid, std in prompt_uid2metric_std.items() if std > 0 or len(prompt_uid2metric_vals[uid]) == 1]
    kept_traj_idxs = [i for i, uid in enumerate(uids) if uid in kept_prompt_uids]
    return kept_prompt_uids, kept_traj_idxs


def dapo_overlong_reward(valid_response_length, max_resp_len, overlong_buffer_len, penalty_factor):
    """verl recipe/dapo reward manager: overlong_buffer shaping."""
    expected_len = max_resp_len - overlong_buffer_len
    exceed_len = valid_response_length - expected_len
    return min(-exceed_len / overlong_buffer_len * penalty_factor, 0)


# --------------------------------------------------------------------------------------------
# finite differences
# --------------------------------------------------------------------------------------------


def fd_grad(f, x0, h=1e-6):
    """Central differences of scalar f at x0 (any shape), checked against step 10*h."""
    g = np.zeros_like(x0)
    flat = x0.reshape(-1)
    for k in range(flat.size):
        vals = []
        for step in (h, 10 * h):
            xp = flat.copy()
            xm = flat.copy()
            xp[k] += step
            xm[k] -= step
            # divide by the step actually realised in floating point (matters for |x| >> 1)
            realised = (xp[k] - flat[k]) + (flat[k] - xm[k])
            vals.append((f(xp.reshape(x0.shape)) - f(xm.reshape(x0.shape))) / realised)
        if abs(vals[0] - vals[1]) > 1e-6 * max(1.0, abs(vals[0])):
            raise RuntimeError(f"kink inside FD stencil at element {k}: {vals}")
        g.reshape(-1)[k] = vals[0]
    return g


# --------------------------------------------------------------------------------------------
# golden data
# --------------------------------------------------------------------------------------------


def L(a):
    """float64 array -> flat list"""
    return [float(v) for v in np.asarray(a, dtype=np.float64).reshape(-1)]


rng = np.random.default_rng(20240607)

MASK_A = np.array(
    [
        [1, 1, 1, 1, 1, 0, 0, 0],
        [1, 1, 1, 0, 0, 1, 1, 0],  # hole
        [0, 0, 0, 0, 0, 0, 0, 0],  # all masked
        [1, 1, 1, 1, 1, 1, 1, 1],  # full
        [1, 0, 1, 0, 1, 1, 0, 0],  # several holes
        [1, 1, 0, 0, 0, 0, 0, 0],
    ],
    dtype=np.float64,
)



def outcome_rewards(mask, scores):
    """Outcome reward placed on the last unmasked token (rows without tokens get none)."""
    r = np.zeros_like(mask)
    for i in range(mask.shape[0]):
        idx = np.nonzero(mask[i])[0]
        if idx.size:
            r[i, idx[-1]] = scores[i]
    return r


def gen_grpo_per_step():
    """Multi-turn masks (turns = runs of 1s) with per-turn scores."""
    cases = []
    mask_mt = np.array(
        [
            [1, 1, 0, 0, 1, 1, 1, 0, 1, 0],  # 3 turns
            [1, 1, 1, 0, 0, 1, 1, 0, 0, 0],  # 2 turns
            [1, 1, 1, 1, 0, 0, 0, 0, 0, 0],  # 1 turn
            [1, 0, 1, 0, 1, 0, 1, 1, 0, 0],  # 4 turns, only 2 scores -> last return reused
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],  # no turn
            [1, 1, 0, 1, 1, 1, 1, 1, 1, 1],  # 2 turns, 3 scores -> extra ignored
            [1, 1, 1, 0, 1, 1, 0, 0, 0, 0],  # 2 turns, no scores -> total token reward
        ],
        dtype=np.float64,
    )
    turn_scores = [[0.0, 0.5, 1.0], [0.2, -0.1], [1.0], [0.3, 0.1], [0.5], [0.0, 0.0, 2.0], []]
    idx_mt = ["g0", "g0", "g0", "g1", "g1", "g1", "g2"]
    tl_mt = outcome_rewards(mask_mt, np.array([1.0, 0.0, 1.0, 0.5, 0.0, 1.5, 0.75]))
    for gamma, norm in [(1.0, True), (0.9, True), (0.9, False)]:
        adv, ret = compute_grpo_per_step_advantage(tl_mt, mask_mt, idx_mt, turn_scores, gamma, 1e-6, norm)
        cases.append(dict(name=f"grpo_per_step gamma={gamma} norm={norm}", estimator="grpo_per_step", batch=7, seqLen=10,
                          inputs=dict(tokenLevelRewards=L(tl_mt), responseMask=L(mask_mt), index=idx_mt, turnScores=turn_scores),
                          config=dict(gamma=gamma, norm_adv_by_std_in_grpo=norm), expected=dict(advantages=L(adv), returns=L(ret))))
    adv, ret = compute_grpo_per_step_advantage(tl_mt, mask_mt, idx_mt, None, 1.0, 1e-6, True)
    cases.append(dict(name="grpo_per_step without turn scores = grpo", estimator="grpo_per_step", batch=7, seqLen=10,
                      inputs=dict(tokenLevelRewards=L(tl_mt), responseMask=L(mask_mt), index=idx_mt), config=dict(gamma=1.0),
                      expected=dict(advantages=L(adv), returns=L(ret))))
    return cases


def gen_sft():
    """SFT cross-entropy: logits [B, T, V], labels, a loss mask with holes and an empty row."""
    cases = []
    B, T, V = 3, 5, 11
    lg = rng.normal(0, 1.5, (B, T, V))
    lg[1, 2] *= 300.0
    labels = rng.integers(0, V, (B, T))
    mask = np.array([[1, 1, 1, 0, 0], [0, 1, 1, 1, 1], [0, 0, 0, 0, 0]], dtype=np.float64)
    for agg in ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"]:
        lp = logprobs_from_logits(lg, labels)
        loss = agg_loss(-lp, mask, agg)
        dlp = fd_grad(lambda x: agg_loss(-x, mask, agg), lp)
        shift = lg.max(axis=-1, keepdims=True)  # log-softmax is shift-invariant: FD on (z - max) avoids cancellation at |z| ~ 1e2
        # h = 1e-4: the row of logits scaled by 300 makes the loss large, and the rounding noise of a
        # 1e-6 step (|loss|·eps/h) would exceed the spec's tolerance.
        dlogits = fd_grad(lambda x: agg_loss(-logprobs_from_logits(x - shift, labels), mask, agg), lg, h=1e-4)
        cases.append(dict(name=f"sft {agg}", lossAggMode=agg, batch=B, seqLen=T, vocab=V,
                          inputs=dict(logits=L(lg), labels=[int(v) for v in labels.reshape(-1)], lossMask=L(mask)),
                          expected=dict(logProbs=L(lp), loss=loss, dLogProb=L(dlp), dLogits=L(dlogits))))
    return cases


def gen_metrics():
    cases = []
    B, T = MASK_A.shape
    scores = outcome_rewards(MASK_A, np.array([1.0, 0.0, 0.7, 1.0, 0.25, -1.0]))
    rewards = scores - 0.01 * rng.random((B, T)) * MASK_A
    adv = rng.normal(0, 1, (B, T)) * MASK_A
    ret = rng.normal(0, 1, (B, T))
    vals = ret + rng.normal(0, 0.3, (B, T))
    prompt_lengths = [5, 12, 12, 3, 9, 12]
    m = compute_data_metrics(scores, rewards, adv, ret, MASK_A, vals, prompt_lengths, 12)
    cases.append(dict(name="data metrics with critic", batch=B, seqLen=T,
                      inputs=dict(tokenLevelScores=L(scores), tokenLevelRewards=L(rewards), advantages=L(adv), returns=L(ret),
                                  responseMask=L(MASK_A), values=L(vals), promptLengths=prompt_lengths, maxPromptLength=12),
                      expected=m))
    m = compute_data_metrics(scores, rewards, adv, ret, MASK_A)
    cases.append(dict(name="data metrics without critic", batch=B, seqLen=T,
                      inputs=dict(tokenLevelScores=L(scores), tokenLevelRewards=L(rewards), advantages=L(adv), returns=L(ret),
                                  responseMask=L(MASK_A)),
                      expected=m))
    return cases


def gen_dapo():
    uids = ["a", "a", "a", "b", "b", "c", "d", "d", "e", "e", "e"]
    acc = [1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.5, 0.5, 0.0, 0.25, 0.0]
    kept_uids, kept_idx = dapo_filter_groups(uids, acc)
    overlong = []
    for length in [0, 100, 3072, 3073, 3500, 4096, 5000]:
        overlong.append(dict(length=length, maxRespLen=4096, bufferLen=1024, penaltyFactor=1.0,
                             expected=dapo_overlong_reward(length, 4096, 1024, 1.0)))
    for length in [3000, 3600, 4096]:
        overlong.append(dict(length=length, maxRespLen=4096, bufferLen=512, penaltyFactor=0.5,
                             expected=dapo_overlong_reward(length, 4096, 512, 0.5)))
    return dict(filter=dict(uids=uids, metric=acc, keptUids=kept_uids, keptIndices=kept_idx), overlong=overlong)


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    files = {
        "grpo_per_step.json": gen_grpo_per_step(),
        "sft.json": gen_sft(),
        "metrics.json": gen_metrics(),
        "dapo.json": gen_dapo(),
    }
    header = {
        "generator": "libs/rl/reference/verl_reference.py",
        "numpy": np.__version__,
        "note": "float64 golden values; gradients by central finite differences",
    }
    for name, cases in files.items():
        with open(os.path.join(OUT_DIR, name), "w") as f:
            json.dump({"meta": header, "cases": cases}, f, indent=None, separators=(",", ":"), allow_nan=False)
            f.write("\n")
        print(f"wrote {name}: {len(cases) if isinstance(cases, list) else 1} cases")


if __name__ == "__main__":
    main()
