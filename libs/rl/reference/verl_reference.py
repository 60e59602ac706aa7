#!/usr/bin/env python3
"""Independent NumPy reference for @opentinker/rl.

Transcribed from verl's ``verl/trainer/ppo/core_algos.py`` and ``verl/utils/torch_functional.py``
(torch replaced by NumPy, float64 throughout), from verl's DAPO recipe (dynamic sampling filter,
overlong reward shaping) and ``verl/trainer/ppo/metric_utils.py`` (``compute_data_metrics``), and
from OpenTinker's ``compute_grpo_per_step_advantage``. It is written from those sources, not from
the TypeScript package, and is only used to produce the golden files in ``../src/__golden__``.

Places where verl raises or produces NaN/Inf (0/0 in an aggregation, whitening over fewer than two
tokens, ...) are marked ``# GUARD``: the TypeScript package defines a finite result there and this
reference implements the same documented definition so that it can be checked.

Gradients: the package returns d loss / d log_prob per token (and d loss / d logits, d loss / d
vpreds). Here they are computed independently by central finite differences of the loss in float64,
with every ``.detach()`` of verl frozen at the evaluation point (the "surrogate" torch would
differentiate). Each finite difference is computed with two step sizes and rejected if they disagree
(a kink inside the stencil), so the golden gradients never straddle a clip boundary.

Run: ``python3 libs/rl/reference/verl_reference.py`` (writes ``libs/rl/src/__golden__/*.json``).
"""

from __future__ import annotations

import json
import math
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


def masked_var(values, mask, unbiased=True):
    mean = masked_mean(values, mask)
    centered_values = values - mean
    variance = masked_mean(centered_values**2, mask)
    if unbiased:
        mask_sum = mask.sum()
        if mask_sum == 0:
            raise ValueError("At least one element in the mask has to be 1.")
        if mask_sum == 1:
            raise ValueError("The sum of the mask is one, which can cause a division by zero.")
        bessel_correction = mask_sum / (mask_sum - 1)
        variance = variance * bessel_correction
    return variance


def masked_whiten(values, mask, shift_mean=True):
    # GUARD: verl raises (masked_var) when fewer than two tokens are unmasked; we return zeros.
    if mask.sum() < 2:
        return np.zeros_like(values)
    mean, var = masked_mean(values, mask), masked_var(values, mask)
    whitened = (values - mean) * (1.0 / np.sqrt(var + 1e-8))
    if not shift_mean:
        whitened += mean
    return whitened


def clip_by_value(x, tensor_min, tensor_max):
    return np.maximum(np.minimum(x, tensor_max), tensor_min)


def logsumexp(logits, axis=-1):
    m = np.max(logits, axis=axis, keepdims=True)
    return (m + np.log(np.sum(np.exp(logits - m), axis=axis, keepdims=True))).squeeze(axis)


def softmax(logits, axis=-1):
    m = np.max(logits, axis=axis, keepdims=True)
    e = np.exp(logits - m)
    return e / e.sum(axis=axis, keepdims=True)


def entropy_from_logits(logits):
    pd = softmax(logits)
    return logsumexp(logits) - np.sum(pd * logits, axis=-1)


def logprobs_from_logits(logits, labels):
    logits_labels = np.take_along_axis(logits, labels[..., None], axis=-1)[..., 0]
    return logits_labels - logsumexp(logits)


def torch_std(x):
    """torch.std: unbiased (n - 1)."""
    x = np.asarray(x, dtype=np.float64)
    return float(np.sqrt(np.sum((x - x.mean()) ** 2) / (len(x) - 1)))


# --------------------------------------------------------------------------------------------
# advantage estimators (core_algos.py)
# --------------------------------------------------------------------------------------------


def compute_gae_advantage_return(token_level_rewards, values, response_mask, gamma, lam):
    nextvalues = 0.0
    lastgaelam = 0.0
    advantages_reversed = []
    gen_len = token_level_rewards.shape[-1]
    for t in reversed(range(gen_len)):
        delta = token_level_rewards[:, t] + gamma * nextvalues - values[:, t]
        lastgaelam_ = delta + gamma * lam * lastgaelam
        nextvalues = values[:, t] * response_mask[:, t] + (1 - response_mask[:, t]) * nextvalues
        lastgaelam = lastgaelam_ * response_mask[:, t] + (1 - response_mask[:, t]) * lastgaelam
        advantages_reversed.append(lastgaelam)
    advantages = np.stack(advantages_reversed[::-1], axis=1)
    returns = advantages + values
    advantages = masked_whiten(advantages, response_mask)
    return advantages, returns


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


def compute_grpo_passk_outcome_advantage(token_level_rewards, response_mask, index, epsilon=1e-6, norm_adv_by_std_in_grpo=True):
    scores = token_level_rewards.sum(axis=-1)
    advantages = np.zeros_like(scores)
    id2scores = defaultdict(list)
    id2indices = defaultdict(list)
    for i in range(scores.shape[0]):
        id2scores[index[i]].append(scores[i])
        id2indices[index[i]].append(i)
    for idx in id2scores:
        rewards = np.array(id2scores[idx])
        if rewards.size < 2:
            raise ValueError("Pass@k requires at least 2 samples per group")
        # torch.topk(rewards, 2): largest first; ties resolved to the lowest index here (documented)
        order = sorted(range(len(rewards)), key=lambda k: (-rewards[k], k))
        r_max, r_second = rewards[order[0]], rewards[order[1]]
        i_max = id2indices[idx][order[0]]
        advantage = r_max - r_second
        if norm_adv_by_std_in_grpo:
            advantage = advantage / (torch_std(rewards) + epsilon)
        advantages[i_max] = advantage
    advantages = advantages[:, None] * response_mask
    return advantages, advantages


def compute_reinforce_plus_plus_baseline_outcome_advantage(token_level_rewards, response_mask, index, epsilon=1e-6):
    response_length = token_level_rewards.shape[-1]
    scores = token_level_rewards.sum(axis=-1).copy()
    id2score = defaultdict(list)
    id2mean = {}
    for i in range(scores.shape[0]):
        id2score[index[i]].append(scores[i])
    for idx in id2score:
        id2mean[idx] = 0.0 if len(id2score[idx]) == 1 else float(np.mean(id2score[idx]))
    for i in range(scores.shape[0]):
        scores[i] = scores[i] - id2mean[index[i]]
    scores = np.tile(scores[:, None], [1, response_length]) * response_mask
    scores = masked_whiten(scores, response_mask) * response_mask
    return scores, scores


def compute_rloo_outcome_advantage(token_level_rewards, response_mask, index, epsilon=1e-6):
    scores = token_level_rewards.sum(axis=-1).copy()
    id2score = defaultdict(list)
    id2mean = {}
    for i in range(scores.shape[0]):
        id2score[index[i]].append(scores[i])
    for idx in id2score:
        id2mean[idx] = 0.0 if len(id2score[idx]) == 1 else float(np.mean(id2score[idx]))
    for i in range(scores.shape[0]):
        n = len(id2score[index[i]])
        if n > 1:
            scores[i] = scores[i] * n / (n - 1) - id2mean[index[i]] * n / (n - 1)
    scores = scores[:, None] * response_mask
    return scores, scores


def compute_opo_outcome_advantage(token_level_rewards, response_mask, index, epsilon=1e-6):
    response_length = response_mask.sum(axis=-1)
    scores = token_level_rewards.sum(axis=-1).copy()
    id2score = defaultdict(list)
    id2len = defaultdict(list)
    id2bsl = {}
    for i in range(scores.shape[0]):
        id2score[index[i]].append(scores[i])
        id2len[index[i]].append(response_length[i])
    for idx in id2score:
        if len(id2score[idx]) == 1:
            id2bsl[idx] = 0.0
        else:
            s = np.array(id2score[idx])
            ln = np.array(id2len[idx])
            # GUARD: verl gives 0/0 = NaN when every response of the group is empty; baseline 0.
            id2bsl[idx] = 0.0 if ln.sum() == 0 else float((ln * s).sum() / ln.sum())
    for i in range(scores.shape[0]):
        scores[i] = scores[i] - id2bsl[index[i]]
    scores = scores[:, None] * response_mask
    return scores, scores


def compute_reinforce_plus_plus_outcome_advantage(token_level_rewards, response_mask, gamma):
    returns = np.zeros_like(token_level_rewards)
    running_return = 0.0
    for t in reversed(range(token_level_rewards.shape[1])):
        running_return = token_level_rewards[:, t] + gamma * running_return
        returns[:, t] = running_return
        running_return = running_return * response_mask[:, t]
    advantages = masked_whiten(returns, response_mask)
    advantages = advantages * response_mask
    return advantages, returns


def compute_remax_outcome_advantage(token_level_rewards, reward_baselines, response_mask):
    returns = np.flip(np.cumsum(np.flip(token_level_rewards * response_mask, axis=-1), axis=-1), axis=-1)
    advantages = returns - reward_baselines[:, None] * response_mask
    return advantages, returns


def compute_gpg_outcome_advantage(token_level_rewards, response_mask, index, epsilon=1e-6, f_norm=1.0):
    scores = token_level_rewards.sum(axis=-1).copy()
    bsz = scores.shape[0]
    m = np.count_nonzero(scores)
    alpha = bsz / max(m, 1)
    id2score = defaultdict(list)
    id2mean = {}
    for i in range(bsz):
        id2score[index[i]].append(scores[i])
    for idx in id2score:
        id2mean[idx] = 0.0 if len(id2score[idx]) == 1 else float(np.mean(id2score[idx]))
    for i in range(bsz):
        scores[i] = alpha * (scores[i] - id2mean[index[i]]) / f_norm
    scores = scores[:, None] * response_mask
    return scores, scores


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
# aggregation, policy losses, value loss, KL
# --------------------------------------------------------------------------------------------


def agg_loss(loss_mat, loss_mask, loss_agg_mode, dp_size=1, batch_num_tokens=None, global_batch_size=None, loss_scale_factor=None):
    if loss_agg_mode == "token-mean":
        if batch_num_tokens is None:
            batch_num_tokens = loss_mask.sum()
        # GUARD: 0/0 -> 0
        if batch_num_tokens == 0:
            return 0.0
        loss = masked_sum(loss_mat, loss_mask) / batch_num_tokens * dp_size
    elif loss_agg_mode in ("seq-mean-token-sum", "seq-mean-token-sum-norm"):
        seq_losses = np.sum(np.where(loss_mask.astype(bool), loss_mat, 0.0) * loss_mask, axis=-1)
        seq_mask = (np.sum(loss_mask, axis=-1) > 0).astype(np.float64)
        if global_batch_size is None:
            global_batch_size = seq_mask.sum()
        if global_batch_size == 0:  # GUARD
            return 0.0
        loss = masked_sum(seq_losses, seq_mask) / global_batch_size * dp_size
        if loss_agg_mode == "seq-mean-token-sum-norm":
            if loss_scale_factor is None:
                loss_scale_factor = loss_mask.shape[-1]
            loss /= loss_scale_factor
    elif loss_agg_mode == "seq-mean-token-mean":
        seq_mask = np.sum(loss_mask, axis=-1)
        seq_losses = np.sum(np.where(loss_mask.astype(bool), loss_mat, 0.0) * loss_mask, axis=-1) / (seq_mask + 1e-8)
        seq_mask = (seq_mask > 0).astype(np.float64)
        if global_batch_size is None:
            global_batch_size = seq_mask.sum()
        if global_batch_size == 0:  # GUARD
            return 0.0
        loss = masked_sum(seq_losses, seq_mask) / global_batch_size * dp_size
    else:
        raise ValueError(loss_agg_mode)
    return float(loss)


def _clip_cfg(config):
    clip_ratio = config.get("clip_ratio", 0.2)
    lo = config.get("clip_ratio_low")
    hi = config.get("clip_ratio_high")
    return clip_ratio, (clip_ratio if lo is None else lo), (clip_ratio if hi is None else hi)


def policy_loss_vanilla(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config, rollout_is_weights=None, frozen=None):
    _, cliprange_low, cliprange_high = _clip_cfg(config)
    clip_ratio_c = config.get("clip_ratio_c", 3.0)
    assert clip_ratio_c > 1.0
    negative_approx_kl = np.clip(log_prob - old_log_prob, -20.0, 20.0)
    ratio = np.exp(negative_approx_kl)
    ppo_kl = masked_mean(-negative_approx_kl, response_mask)
    pg_losses1 = -advantages * ratio
    pg_losses2 = -advantages * np.clip(ratio, 1 - cliprange_low, 1 + cliprange_high)
    clip_pg_losses1 = np.maximum(pg_losses1, pg_losses2)
    pg_clipfrac = masked_mean((pg_losses2 > pg_losses1).astype(np.float64), response_mask)
    pg_losses3 = -advantages * clip_ratio_c
    clip_pg_losses2 = np.minimum(pg_losses3, clip_pg_losses1)
    pg_clipfrac_lower = masked_mean((clip_pg_losses1 > pg_losses3) * (advantages < 0).astype(np.float64), response_mask)
    pg_losses = np.where(advantages < 0, clip_pg_losses2, clip_pg_losses1)
    if rollout_is_weights is not None:
        pg_losses = pg_losses * rollout_is_weights
    pg_loss = agg_loss(pg_losses, response_mask, loss_agg_mode, **config.get("global_batch_info", {}))
    return pg_loss, {"pg_clipfrac": pg_clipfrac, "ppo_kl": ppo_kl, "pg_clipfrac_lower": pg_clipfrac_lower}


def policy_loss_gspo(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config, rollout_is_weights=None, frozen=None):
    frozen = log_prob if frozen is None else frozen
    _, clip_ratio_low, clip_ratio_high = _clip_cfg(config)
    negative_approx_kl = log_prob - old_log_prob
    seq_lengths = np.maximum(np.sum(response_mask, axis=-1), 1)
    # detached quantities are taken at the frozen point
    negative_approx_kl_seq_detached = np.sum((frozen - old_log_prob) * response_mask, axis=-1) / seq_lengths
    log_seq_importance_ratio = log_prob - frozen + negative_approx_kl_seq_detached[:, None]
    log_seq_importance_ratio = np.minimum(log_seq_importance_ratio, 10.0)
    seq_importance_ratio = np.exp(log_seq_importance_ratio)
    pg_losses1 = -advantages * seq_importance_ratio
    pg_losses2 = -advantages * np.clip(seq_importance_ratio, 1 - clip_ratio_low, 1 + clip_ratio_high)
    pg_losses = np.maximum(pg_losses1, pg_losses2)
    if rollout_is_weights is not None:
        pg_losses = pg_losses * rollout_is_weights
    pg_loss = agg_loss(pg_losses, response_mask, "seq-mean-token-mean", **config.get("global_batch_info", {}))
    pg_clipfrac = masked_mean((pg_losses2 > pg_losses1).astype(np.float64), response_mask)
    ppo_kl = masked_mean(-negative_approx_kl, response_mask)
    return pg_loss, {"pg_clipfrac": pg_clipfrac, "ppo_kl": ppo_kl, "pg_clipfrac_lower": 0.0}


def policy_loss_cispo(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config, rollout_is_weights=None, frozen=None):
    frozen = log_prob if frozen is None else frozen
    _, clip_ratio_low, clip_ratio_high = _clip_cfg(config)
    negative_approx_kl = np.clip(log_prob - old_log_prob, -20.0, 20.0)
    ratio = np.exp(negative_approx_kl)
    ppo_kl = masked_mean(-negative_approx_kl, response_mask)
    clipped_ratio = np.clip(ratio, 1 - clip_ratio_low, 1 + clip_ratio_high)
    # clipped_ratio.detach(): evaluated at the frozen point
    clipped_ratio_sg = np.clip(np.exp(np.clip(frozen - old_log_prob, -20.0, 20.0)), 1 - clip_ratio_low, 1 + clip_ratio_high)
    pg_losses = -clipped_ratio_sg * advantages * log_prob
    pg_clipfrac = masked_mean((ratio != clipped_ratio).astype(np.float64), response_mask)
    if rollout_is_weights is not None:
        pg_losses = pg_losses * rollout_is_weights
    pg_loss = agg_loss(pg_losses, response_mask, loss_agg_mode, **config.get("global_batch_info", {}))
    return pg_loss, {"pg_clipfrac": pg_clipfrac, "ppo_kl": ppo_kl, "pg_clipfrac_lower": 0.0}


def policy_loss_gpg(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config, rollout_is_weights=None, frozen=None):
    pg_losses = -log_prob * advantages
    if rollout_is_weights is not None:
        pg_losses = pg_losses * rollout_is_weights
    pg_loss = agg_loss(pg_losses, response_mask, loss_agg_mode, **config.get("global_batch_info", {}))
    return pg_loss, {"pg_clipfrac": 0.0, "ppo_kl": 0.0, "pg_clipfrac_lower": 0.0}


def policy_loss_clip_cov(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config, rollout_is_weights=None, frozen=None):
    """Only used where every candidate is selected (no torch.randperm dependence)."""
    frozen = log_prob if frozen is None else frozen
    pl = config.get("policy_loss", {})
    clip_cov_ratio = pl.get("clip_cov_ratio", 0.0002)
    clip_cov_ub = pl.get("clip_cov_ub", 5.0)
    clip_cov_lb = pl.get("clip_cov_lb", 1.0)
    _, cliprange_low, cliprange_high = _clip_cfg(config)
    negative_approx_kl = log_prob - old_log_prob
    ratio = np.exp(negative_approx_kl)
    ppo_kl = masked_mean(-negative_approx_kl, response_mask)
    pg_losses1 = -advantages * ratio
    corr = np.ones_like(advantages)
    pg_losses2 = -advantages * np.clip(ratio, 1 - cliprange_low, 1 + cliprange_high)
    # selection is discrete: computed at the frozen point
    ratio_f = np.exp(frozen - old_log_prob)
    l1f = -advantages * ratio_f
    l2f = -advantages * np.clip(ratio_f, 1 - cliprange_low, 1 + cliprange_high)
    clip_by_origin = (l2f > l1f) & (response_mask > 0)
    cov_all = (advantages - masked_mean(advantages, response_mask)) * (frozen - masked_mean(frozen, response_mask))
    cov_all = np.where(response_mask == 0, -np.inf, cov_all)
    cov_all = np.where(clip_by_origin, -np.inf, cov_all)
    clip_num = max(int(clip_cov_ratio * response_mask.sum()), 1)
    cand = np.argwhere((cov_all < clip_cov_ub) & (cov_all > clip_cov_lb) & (response_mask > 0))
    assert len(cand) <= clip_num, "golden case must select every candidate (torch.randperm otherwise)"
    for r, c in cand:
        corr[r, c] = 0
    pg_clipfrac = masked_mean((corr == 0).astype(np.float64), response_mask)
    pg_losses = np.maximum(pg_losses1, pg_losses2) * corr
    if rollout_is_weights is not None:
        pg_losses = pg_losses * rollout_is_weights
    pg_loss = agg_loss(pg_losses, response_mask, loss_agg_mode, **config.get("global_batch_info", {}))
    return pg_loss, {"pg_clipfrac": pg_clipfrac, "ppo_kl": ppo_kl, "pg_clipfrac_lower": 0.0, "n_selected": len(cand)}


def policy_loss_kl_cov(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config, rollout_is_weights=None, frozen=None):
    frozen = log_prob if frozen is None else frozen
    pl = config.get("policy_loss", {})
    kl_cov_ratio = pl.get("kl_cov_ratio", 0.0002)
    ppo_kl_coef = pl.get("ppo_kl_coef", 1.0)
    negative_approx_kl = log_prob - old_log_prob
    abs_kl = np.abs(negative_approx_kl)
    ratio = np.exp(negative_approx_kl)
    ppo_kl_abs = masked_mean(np.abs(negative_approx_kl), response_mask)
    pg_losses1 = -advantages * ratio
    pg_losses_kl = -advantages * ratio + ppo_kl_coef * abs_kl
    pg_losses = pg_losses1.copy()
    all_valid = response_mask > 0
    all_valid_idx = np.nonzero(all_valid.reshape(-1))[0]
    all_valid_adv = advantages[all_valid].reshape(-1)
    all_valid_logp = frozen[all_valid].reshape(-1)  # detached
    k = min(kl_cov_ratio, len(all_valid_adv))
    selected = []
    if k != 0:
        cov = (all_valid_adv - all_valid_adv.mean()) * (all_valid_logp - all_valid_logp.mean())
        k_percent_nums = max(1, int(len(cov) * kl_cov_ratio))
        # torch.topk(largest=True); ties broken by lowest flat index here (documented)
        order = sorted(range(len(cov)), key=lambda q: (-cov[q], q))[:k_percent_nums]
        large = all_valid_idx[order]
        T = advantages.shape[1]
        for f in large:
            pg_losses[f // T, f % T] = pg_losses_kl[f // T, f % T]
            selected.append(int(f))
    if rollout_is_weights is not None:
        pg_losses = pg_losses * rollout_is_weights
    pg_loss = agg_loss(pg_losses, response_mask, loss_agg_mode, **config.get("global_batch_info", {}))
    return pg_loss, {"pg_clipfrac": 0.0, "ppo_kl": ppo_kl_abs, "pg_clipfrac_lower": 0.0}


def policy_loss_geo_mean(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config, rollout_is_weights=None, frozen=None):
    _, cliprange_low, cliprange_high = _clip_cfg(config)
    negative_approx_kl = log_prob - old_log_prob
    ppo_kl = masked_mean(-negative_approx_kl, response_mask)
    sgn_advantage = np.sign(advantages)
    negative_approx_kl_clamp = np.clip(negative_approx_kl, -cliprange_low, cliprange_high)
    negative_approx_kl_min = np.minimum(sgn_advantage * negative_approx_kl, sgn_advantage * negative_approx_kl_clamp)
    negative_approx_kl_min = sgn_advantage * negative_approx_kl_min
    response_mask_sum = response_mask.sum(axis=-1)
    ratio = np.exp((negative_approx_kl_min * response_mask).sum(axis=-1) / (response_mask_sum + 1e-8))
    advantage = (advantages * response_mask).sum(axis=-1) / (response_mask_sum + 1e-8)
    pg_losses = -advantage * ratio
    if rollout_is_weights is not None:
        seq_is = np.exp((np.log(rollout_is_weights + 1e-10) * response_mask).sum(axis=-1) / (response_mask_sum + 1e-8))
        pg_losses = pg_losses * seq_is
    pg_loss = float(np.mean(pg_losses))
    clipped = negative_approx_kl != negative_approx_kl_clamp
    pg_clipfrac = masked_mean((clipped * (advantages > 0)).astype(np.float64), response_mask)
    pg_clipfrac_lower = masked_mean((clipped * (advantages < 0)).astype(np.float64), response_mask)
    return pg_loss, {"pg_clipfrac": pg_clipfrac, "ppo_kl": ppo_kl, "pg_clipfrac_lower": pg_clipfrac_lower}


POLICY_LOSSES = {
    "vanilla": policy_loss_vanilla,
    "gspo": policy_loss_gspo,
    "cispo": policy_loss_cispo,
    "gpg": policy_loss_gpg,
    "clip_cov": policy_loss_clip_cov,
    "kl_cov": policy_loss_kl_cov,
    "geo_mean": policy_loss_geo_mean,
}


def compute_value_loss(vpreds, returns, values, response_mask, cliprange_value, loss_agg_mode="token-mean"):
    vpredclipped = clip_by_value(vpreds, values - cliprange_value, values + cliprange_value)
    vf_losses1 = (vpreds - returns) ** 2
    vf_losses2 = (vpredclipped - returns) ** 2
    clipped_vf_losses = np.maximum(vf_losses1, vf_losses2)
    vf_loss = 0.5 * agg_loss(clipped_vf_losses, response_mask, loss_agg_mode)
    vf_clipfrac = masked_mean((vf_losses2 > vf_losses1).astype(np.float64), response_mask)
    return vf_loss, vf_clipfrac


def kl_penalty_forward(logprob, ref_logprob, kl_penalty):
    if kl_penalty in ("kl", "k1"):
        return logprob - ref_logprob
    if kl_penalty == "abs":
        return np.abs(logprob - ref_logprob)
    if kl_penalty in ("mse", "k2"):
        return 0.5 * np.square(logprob - ref_logprob)
    if kl_penalty in ("low_var_kl", "k3"):
        kl = np.clip(ref_logprob - logprob, -20, 20)
        ratio = np.exp(kl)
        kld = ratio - kl - 1
        return np.clip(kld, -10, 10)
    raise NotImplementedError(kl_penalty)


def kl_penalty(logprob, ref_logprob, kl_penalty, frozen=None):
    frozen = logprob if frozen is None else frozen
    # NOTE: upstream passes the name with its "+" to kl_penalty_forward (which would raise for
    # "k3+"); the intent -- forward value of the base estimator -- is implemented here.
    base = kl_penalty[:-1] if kl_penalty.endswith("+") else kl_penalty
    if not kl_penalty.endswith("+") or base in ("mse", "k2"):
        return kl_penalty_forward(logprob, ref_logprob, base)
    backward_score = 0.5 * np.square(logprob - ref_logprob)
    backward_score_detached = 0.5 * np.square(frozen - ref_logprob)
    forward_detached = kl_penalty_forward(frozen, ref_logprob, base)
    return backward_score - backward_score_detached + forward_detached


def apply_kl_penalty(token_level_scores, old_log_probs, ref_log_prob, response_mask, beta, kl_type):
    kld = kl_penalty(old_log_probs, ref_log_prob, kl_type) * response_mask
    token_level_rewards = token_level_scores - beta * kld
    current_kl = float(np.mean(masked_mean(kld, response_mask, axis=-1)))
    return token_level_rewards, current_kl


def adaptive_kl_update(value, target, horizon, current_kl, n_steps):
    proportional_error = np.clip(current_kl / target - 1, -0.2, 0.2)
    mult = 1 + proportional_error * n_steps / horizon
    return value * mult


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

# masks: right padding, an all-masked row, holes (multi-turn: env tokens masked), a full row
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

MASK_B = np.array(
    [
        [1, 1, 1, 1, 0, 0],
        [1, 1, 0, 0, 0, 0],
        [1, 1, 1, 1, 1, 1],
        [1, 0, 0, 1, 1, 0],
        [0, 0, 0, 0, 0, 0],
        [1, 1, 1, 0, 0, 0],
        [1, 1, 1, 1, 1, 0],
        [1, 0, 0, 0, 0, 0],
        [1, 1, 0, 1, 1, 1],
        [1, 1, 1, 1, 0, 0],
    ],
    dtype=np.float64,
)
# groups for MASK_B rows: p0 x3, p1 x3 (all-equal rewards), p2 singleton, p3 x3 (incl. empty row)
INDEX_B = ["p0", "p0", "p1", "p1", "p3", "p2", "p0", "p1", "p3", "p3"]


def outcome_rewards(mask, scores):
    """Outcome reward placed on the last unmasked token (rows without tokens get none)."""
    r = np.zeros_like(mask)
    for i in range(mask.shape[0]):
        idx = np.nonzero(mask[i])[0]
        if idx.size:
            r[i, idx[-1]] = scores[i]
    return r


def gen_advantages():
    cases = []

    # GAE with token-level rewards and values, holes, all-masked row
    B, T = MASK_A.shape
    rewards = rng.normal(0, 0.5, (B, T)) * (rng.random((B, T)) < 0.4)
    rewards += outcome_rewards(MASK_A, rng.normal(1, 1, B))
    values = rng.normal(0, 1, (B, T))
    for gamma, lam in [(0.99, 0.95), (1.0, 1.0), (0.9, 0.0)]:
        adv, ret = compute_gae_advantage_return(rewards, values, MASK_A, gamma, lam)
        cases.append(dict(name=f"gae gamma={gamma} lam={lam}", estimator="gae", batch=B, seqLen=T,
                          inputs=dict(tokenLevelRewards=L(rewards), values=L(values), responseMask=L(MASK_A)),
                          config=dict(gamma=gamma, lam=lam), expected=dict(advantages=L(adv), returns=L(ret))))

    # group estimators on MASK_B
    B, T = MASK_B.shape
    scores = np.array([1.0, 0.0, 1.0, 1.0, 0.3, 0.7, 0.5, 1.0, -0.4, 0.0])
    tlr = outcome_rewards(MASK_B, scores)
    # an extra token-level reward inside a row (sum is what counts)
    tlr[0, 1] += 0.25
    base_inputs = dict(tokenLevelRewards=L(tlr), responseMask=L(MASK_B), index=INDEX_B)
    for norm in (True, False):
        adv, ret = compute_grpo_outcome_advantage(tlr, MASK_B, INDEX_B, 1e-6, norm)
        cases.append(dict(name=f"grpo norm={norm}", estimator="grpo", batch=B, seqLen=T, inputs=base_inputs,
                          config=dict(norm_adv_by_std_in_grpo=norm), expected=dict(advantages=L(adv), returns=L(ret))))
    adv, ret = compute_rloo_outcome_advantage(tlr, MASK_B, INDEX_B)
    cases.append(dict(name="rloo", estimator="rloo", batch=B, seqLen=T, inputs=base_inputs, config={},
                      expected=dict(advantages=L(adv), returns=L(ret))))
    adv, ret = compute_opo_outcome_advantage(tlr, MASK_B, INDEX_B)
    cases.append(dict(name="opo", estimator="opo", batch=B, seqLen=T, inputs=base_inputs, config={},
                      expected=dict(advantages=L(adv), returns=L(ret))))
    adv, ret = compute_gpg_outcome_advantage(tlr, MASK_B, INDEX_B)
    cases.append(dict(name="gpg", estimator="gpg", batch=B, seqLen=T, inputs=base_inputs, config={},
                      expected=dict(advantages=L(adv), returns=L(ret))))
    adv, ret = compute_gpg_outcome_advantage(tlr, MASK_B, INDEX_B, f_norm=2.5)
    cases.append(dict(name="gpg f_norm=2.5", estimator="gpg", batch=B, seqLen=T, inputs=base_inputs, config=dict(f_norm=2.5),
                      expected=dict(advantages=L(adv), returns=L(ret))))
    adv, ret = compute_reinforce_plus_plus_baseline_outcome_advantage(tlr, MASK_B, INDEX_B)
    cases.append(dict(name="reinforce_plus_plus_baseline", estimator="reinforce_plus_plus_baseline", batch=B, seqLen=T,
                      inputs=base_inputs, config={}, expected=dict(advantages=L(adv), returns=L(ret))))
    # pass@k needs >= 2 per group
    idx_pk = ["a", "a", "a", "b", "b", "c", "c", "c", "c", "b"]
    for norm in (True, False):
        adv, ret = compute_grpo_passk_outcome_advantage(tlr, MASK_B, idx_pk, 1e-6, norm)
        cases.append(dict(name=f"grpo_passk norm={norm}", estimator="grpo_passk", batch=B, seqLen=T,
                          inputs=dict(tokenLevelRewards=L(tlr), responseMask=L(MASK_B), index=idx_pk),
                          config=dict(norm_adv_by_std_in_grpo=norm), expected=dict(advantages=L(adv), returns=L(ret))))

    # REINFORCE++ with token-level rewards (rewards also on masked positions, as verl allows)
    B, T = MASK_A.shape
    tl = rng.normal(0, 0.3, (B, T)) + outcome_rewards(MASK_A, rng.normal(0, 1, B))
    for gamma in (1.0, 0.9):
        adv, ret = compute_reinforce_plus_plus_outcome_advantage(tl, MASK_A, gamma)
        cases.append(dict(name=f"reinforce_plus_plus gamma={gamma}", estimator="reinforce_plus_plus", batch=B, seqLen=T,
                          inputs=dict(tokenLevelRewards=L(tl), responseMask=L(MASK_A)), config=dict(gamma=gamma),
                          expected=dict(advantages=L(adv), returns=L(ret))))
    baselines = rng.normal(0.5, 0.5, B)
    adv, ret = compute_remax_outcome_advantage(tl, baselines, MASK_A)
    cases.append(dict(name="remax", estimator="remax", batch=B, seqLen=T,
                      inputs=dict(tokenLevelRewards=L(tl), responseMask=L(MASK_A), rewardBaselines=L(baselines)), config={},
                      expected=dict(advantages=L(adv), returns=L(ret))))

    # grpo_per_step: multi-turn masks (turns = runs of 1s), per-turn scores
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


def gen_aggregation():
    cases = []
    B, T = MASK_A.shape
    loss_mat = rng.normal(0, 1, (B, T))
    loss_mat[2, 3] = np.nan  # NaN under the mask must not leak
    for mode in ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"]:
        for extra in [{}, {"loss_scale_factor": 4096}, {"batch_num_tokens": 50, "global_batch_size": 8, "dp_size": 2}]:
            if "loss_scale_factor" in extra and mode != "seq-mean-token-sum-norm":
                continue
            v = agg_loss(loss_mat, MASK_A, mode, **extra)
            g = fd_grad(lambda x: agg_loss(x, MASK_A, mode, **extra), np.nan_to_num(loss_mat))
            cases.append(dict(name=f"{mode} {extra}", mode=mode, batch=B, seqLen=T, options=extra,
                              inputs=dict(lossMat=[None if math.isnan(x) else x for x in L(loss_mat)], lossMask=L(MASK_A)),
                              expected=dict(loss=v, weights=L(g))))
    # all masked
    zero = np.zeros((2, 3))
    for mode in ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"]:
        cases.append(dict(name=f"{mode} all masked", mode=mode, batch=2, seqLen=3, options={},
                          inputs=dict(lossMat=L(np.ones((2, 3))), lossMask=L(zero)),
                          expected=dict(loss=agg_loss(np.ones((2, 3)), zero, mode), weights=L(zero))))
    return cases


def make_policy_inputs(B, T, mask, seed_shift=0.0):
    old = -np.abs(rng.normal(1.5, 1.0, (B, T))) - 0.05
    delta = rng.uniform(-1.2, 1.2, (B, T))
    delta[0, 0] = 2.5  # large ratio (dual clip region when A < 0)
    delta[1, 1] = -2.0
    delta[3, 2] = 25.0  # beyond the +-20 clamp of verl
    lp = old + delta
    adv = rng.normal(0, 1, (B, T))
    adv[0, 0] = -1.3
    adv[3, 2] = -0.7
    return old, lp, adv


def gen_policy_losses():
    cases = []
    B, T = MASK_A.shape
    old, lp, adv = make_policy_inputs(B, T, MASK_A)
    lp_nd = lp.copy()
    lp_nd[3, 2] = old[3, 2] + 1.1  # inside the clamp range for FD-friendly cases
    seq_adv = np.repeat(rng.normal(0, 1, (B, 1)), T, axis=1)
    isw = rng.uniform(0.5, 1.5, (B, T))

    def add(name, mode, lp_, adv_, agg, config, weights=None):
        fn = POLICY_LOSSES[mode]
        loss, metrics = fn(old, lp_, adv_, MASK_A, agg, config, weights)
        grad = fd_grad(lambda x: fn(old, x, adv_, MASK_A, agg, config, weights, frozen=lp_)[0], lp_)
        metrics.pop("n_selected", None)
        cases.append(dict(name=name, lossMode=mode, batch=B, seqLen=T, lossAggMode=agg, config=config,
                          inputs=dict(oldLogProb=L(old), logProb=L(lp_), advantages=L(adv_), responseMask=L(MASK_A),
                                      **({"rolloutIsWeights": L(weights)} if weights is not None else {})),
                          expected=dict(loss=loss, dLogProb=L(grad), **{k: float(v) for k, v in metrics.items()})))

    cfg = dict(clip_ratio=0.2, clip_ratio_low=0.2, clip_ratio_high=0.28, clip_ratio_c=3.0)
    for agg in ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"]:
        add(f"vanilla {agg}", "vanilla", lp, adv, agg, cfg)
    add("vanilla symmetric clip_ratio only", "vanilla", lp, adv, "token-mean", dict(clip_ratio=0.1))
    add("vanilla dual clip c=1.5", "vanilla", lp, adv, "token-mean", dict(clip_ratio=0.2, clip_ratio_c=1.5))
    add("vanilla rollout IS weights", "vanilla", lp, adv, "token-mean", cfg, isw)
    add("vanilla global batch info", "vanilla", lp, adv, "token-mean",
        dict(cfg, global_batch_info=dict(dp_size=2, batch_num_tokens=60, global_batch_size=12)))
    for agg in ["seq-mean-token-mean", "token-mean"]:  # gspo always aggregates seq-mean-token-mean
        add(f"gspo (agg arg {agg})", "gspo", lp_nd, seq_adv, agg, dict(clip_ratio=0.2, clip_ratio_low=0.0003, clip_ratio_high=0.0004))
    add("gspo wide clip", "gspo", lp_nd, seq_adv, "seq-mean-token-mean", dict(clip_ratio=0.2, clip_ratio_low=0.5, clip_ratio_high=0.5))
    for agg in ["token-mean", "seq-mean-token-sum-norm"]:
        add(f"cispo {agg}", "cispo", lp, adv, agg, dict(clip_ratio=0.2, clip_ratio_low=0.2, clip_ratio_high=0.28))
    add("gpg token-mean", "gpg", lp, adv, "token-mean", {})
    add("gpg seq-mean-token-mean", "gpg", lp, adv, "seq-mean-token-mean", {})
    add("kl_cov", "kl_cov", lp_nd, adv, "token-mean", dict(policy_loss=dict(kl_cov_ratio=0.1, ppo_kl_coef=1.0)))
    add("clip_cov", "clip_cov", lp_nd, adv, "token-mean",
        dict(clip_ratio=0.2, policy_loss=dict(clip_cov_ratio=0.5, clip_cov_lb=0.2, clip_cov_ub=5.0)))
    add("geo_mean", "geo_mean", lp_nd, seq_adv, "token-mean", dict(clip_ratio=0.4))
    return cases


def gen_kl():
    cases = []
    B, T = 3, 7
    mask = np.array([[1, 1, 1, 1, 1, 1, 1], [1, 1, 0, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0]], dtype=np.float64)
    lp = -np.abs(rng.normal(1.0, 1.0, (B, T)))
    ref = lp + rng.uniform(-1.5, 1.5, (B, T))
    ref[0, 0] = lp[0, 0] + 3.0   # k3: exp(3) - 3 - 1 = 16.09 -> clamped at 10
    ref[0, 1] = lp[0, 1] + 25.0  # kl clamped at 20 as well
    ref[0, 2] = lp[0, 2] - 30.0  # kl clamped at -20: exp(-20) + 20 - 1 -> clamp 10
    ref[1, 3] = lp[1, 3] - 5.0
    for name in ["kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3", "k1+", "abs+", "k2+", "k3+", "low_var_kl+"]:
        kld = kl_penalty(lp, ref, name)
        for agg in ["token-mean", "seq-mean-token-mean"]:
            loss = agg_loss(kld, mask, agg)
            grad = fd_grad(lambda x: agg_loss(kl_penalty(x, ref, name, frozen=lp), mask, agg), lp)
            cases.append(dict(name=f"{name} {agg}", klType=name, lossAggMode=agg, batch=B, seqLen=T,
                              inputs=dict(logProb=L(lp), refLogProb=L(ref), responseMask=L(mask)),
                              expected=dict(kl=L(kld), loss=loss, dLogProb=L(grad))))
    # apply_kl_penalty (kl in reward) + adaptive controller
    scores = outcome_rewards(mask, np.array([1.0, 0.5, 0.0]))
    for name in ["kl", "low_var_kl"]:
        rewards, current_kl = apply_kl_penalty(scores, lp, ref, mask, 0.05, name)
        cases.append(dict(name=f"apply_kl_penalty {name}", klType=name, kind="apply_kl_penalty", batch=B, seqLen=T, beta=0.05,
                          inputs=dict(tokenLevelScores=L(scores), oldLogProb=L(lp), refLogProb=L(ref), responseMask=L(mask)),
                          expected=dict(tokenLevelRewards=L(rewards), currentKl=current_kl,
                                        adaptiveNext=adaptive_kl_update(0.05, 0.1, 10000, current_kl, B))))
    return cases


def gen_value_loss():
    cases = []
    B, T = MASK_A.shape
    values = rng.normal(0, 1, (B, T))
    returns = values + rng.normal(0, 1, (B, T))
    vpreds = values + rng.uniform(-1.0, 1.0, (B, T))
    for agg in ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"]:
        for clip in (0.5, 0.2):
            loss, clipfrac = compute_value_loss(vpreds, returns, values, MASK_A, clip, agg)
            grad = fd_grad(lambda x: compute_value_loss(x, returns, values, MASK_A, clip, agg)[0], vpreds)
            cases.append(dict(name=f"value loss {agg} clip={clip}", lossAggMode=agg, cliprangeValue=clip, batch=B, seqLen=T,
                              inputs=dict(vpreds=L(vpreds), returns=L(returns), values=L(values), responseMask=L(MASK_A)),
                              expected=dict(loss=loss, vfClipfrac=float(clipfrac), dVpreds=L(grad))))
    return cases


def gen_entropy_sft():
    cases = []
    rows, V = 6, 11
    logits = rng.normal(0, 2, (rows, V))
    logits[1] *= 400.0  # huge logits: naive exp overflows
    logits[2] = 7.0  # uniform row: entropy = log V
    logits[3, 4] = 80.0  # near one-hot
    logits[4] -= 1000.0  # very negative
    ent = entropy_from_logits(logits)
    # d entropy_r / d logits_r, row by row
    grad = np.zeros_like(logits)
    for r in range(rows):
        # entropy is shift-invariant: FD on (z - c) with a constant c avoids the cancellation of
        # logsumexp(z) - sum(p z) at |z| ~ 1e3 that would otherwise dominate the FD error.
        c = logits[r].max()
        grad[r] = fd_grad(lambda x: float(entropy_from_logits((x - c)[None, :])[0]), logits[r].copy(), h=1e-6)
    cases.append(dict(name="entropy_from_logits", rows=rows, vocab=V, inputs=dict(logits=L(logits)),
                      expected=dict(entropy=L(ent), dEntropyDLogits=L(grad))))
    # SFT cross-entropy: logits [B, T, V], labels, loss mask with holes and an empty row
    B, T = 3, 5
    lg = rng.normal(0, 1.5, (B, T, V))
    lg[1, 2] *= 300.0
    labels = rng.integers(0, V, (B, T))
    mask = np.array([[1, 1, 1, 0, 0], [0, 1, 1, 1, 1], [0, 0, 0, 0, 0]], dtype=np.float64)
    for agg in ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"]:
        lp = logprobs_from_logits(lg, labels)
        loss = agg_loss(-lp, mask, agg)
        dlp = fd_grad(lambda x: agg_loss(-x, mask, agg), lp)
        shift = lg.max(axis=-1, keepdims=True)  # log-softmax is shift-invariant (see entropy above)
        dlogits = fd_grad(lambda x: agg_loss(-logprobs_from_logits(x - shift, labels), mask, agg), lg)
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
        "advantages.json": gen_advantages(),
        "aggregation.json": gen_aggregation(),
        "policy_loss.json": gen_policy_losses(),
        "kl.json": gen_kl(),
        "value_loss.json": gen_value_loss(),
        "entropy_sft.json": gen_entropy_sft(),
        "metrics.json": gen_metrics(),
        "dapo.json": gen_dapo(),
    }
    header = {
        "generator": "libs/rl/reference/verl_reference.py",
        "numpy": np.__version__,
        "note": "float64 golden values; gradients by central finite differences with verl's .detach() frozen",
    }
    for name, cases in files.items():
        with open(os.path.join(OUT_DIR, name), "w") as f:
            json.dump({"meta": header, "cases": cases}, f, indent=None, separators=(",", ":"), allow_nan=False)
            f.write("\n")
        print(f"wrote {name}: {len(cases)} cases")


if __name__ == "__main__":
    main()
