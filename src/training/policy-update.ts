/**
 * From trajectories to optimizer steps: rows laid out token-aligned over prompt + response, token-level
 * rewards at each turn's last policy token, advantages by `adv_estimator`, and PPO-style updates
 * (epochs × mini-batches × micro-batches) with the policy loss by `loss_mode`, KL to a reference
 * policy, an entropy bonus and an optional critic. No I/O: the runner and tests drive it.
 */
import { padBatch, type CoefficientSource, type CurrentScores, type LossCoefficients, type MicroBatchResult, type Model, type TokenBatch, type Trainer } from '@opentinker/engine';
import {
  aggWeights,
  computeAdvantage,
  computeValueLoss,
  filterGroupsByMetricStd,
  getPolicyLossFn,
  klLoss,
  sumPiSquaredFromLogits,
  type ActorConfig,
  type AggOptions,
  type LossAggMode,
} from '@opentinker/rl';
import type { AlgorithmSpec } from './learner-spec';
import type { Trajectory } from '../rollout/trajectory';

/** verl's default `critic.cliprange_value`. */
const VALUE_CLIP = 0.5;

/**
 * One episode as a training row. Every per-token array spans the whole row (`ids.length`) and is
 * token-aligned: entry t is about `ids[t]` (its log-prob is `log p(ids[t] | ids[<t])`).
 */
export interface UpdateRow {
  group: number;
  ids: number[];
  promptLength: number;
  /** 1 on tokens the policy sampled; 0 on the prompt, environment and template tokens. */
  mask: Float32Array;
  oldLogProb: Float32Array;
  /** Each turn's reward on that turn's last policy token. */
  rewards: Float32Array;
  turnRewards: number[];
  reward: number;
  advantages?: Float32Array;
  returns?: Float32Array;
  refLogProb?: Float32Array;
  /** Critic values at rollout time (gae). */
  values?: Float32Array;
  /** `Σ_v π(v)²` of the distribution each token was drawn from (optimal-token-baseline estimators). */
  sumPiSquared?: Float32Array;
}

/** Lays a trajectory out as a row. Its reward lands on the last policy token of each turn. */
export function trajectoryRow(t: Trajectory): UpdateRow {
  const p = t.promptIds.length;
  const n = p + t.responseIds.length;
  if (p < 1) throw new Error('A trajectory needs at least one prompt token');
  if (t.lossMask.length !== t.responseIds.length || t.oldLogProbs.length !== t.responseIds.length) {
    throw new Error(`Trajectory of task ${t.taskIndex}: lossMask/oldLogProbs do not match its ${t.responseIds.length} response tokens`);
  }
  if (t.turnEnds.length !== t.turnRewards.length) throw new Error(`Trajectory of task ${t.taskIndex}: ${t.turnEnds.length} turn ends but ${t.turnRewards.length} turn rewards`);
  const mask = new Float32Array(n);
  const oldLogProb = new Float32Array(n);
  const rewards = new Float32Array(n);
  for (let j = 0; j < t.responseIds.length; j++) {
    if (t.lossMask[j]) {
      mask[p + j] = 1;
      oldLogProb[p + j] = t.oldLogProbs[j];
    }
  }
  t.turnEnds.forEach((end, k) => {
    if (!t.lossMask[end]) throw new Error(`Trajectory of task ${t.taskIndex}: turn end ${end} is not a policy token`);
    rewards[p + end] += t.turnRewards[k];
  });
  return { group: t.group, ids: [...t.promptIds, ...t.responseIds], promptLength: p, mask, oldLogProb, rewards, turnRewards: [...t.turnRewards], reward: t.reward };
}

/** Row-major `[rows, seqLen]` matrix of a per-token field (0 past a row's end and where the field is absent). */
function stack(rows: readonly UpdateRow[], seqLen: number, pick: (r: UpdateRow) => ArrayLike<number> | undefined): Float64Array {
  const out = new Float64Array(rows.length * seqLen);
  rows.forEach((r, i) => {
    const a = pick(r);
    if (!a) return;
    for (let t = 0; t < a.length; t++) out[i * seqLen + t] = a[t];
  });
  return out;
}

/** Splits a row-major matrix back into per-row arrays of each row's own length. */
function unstack(rows: readonly UpdateRow[], seqLen: number, flat: ArrayLike<number>): Float32Array[] {
  return rows.map((r, i) => Float32Array.from({ length: r.ids.length }, (_, t) => flat[i * seqLen + t]));
}

function maxLength(rows: readonly UpdateRow[]): number {
  return rows.reduce((m, r) => Math.max(m, r.ids.length), 0);
}

/** The estimators that read old log-probs and `Σπ²` per token (verl's optimal token baselines). */
export const OPTIMAL_TOKEN_BASELINES: ReadonlySet<string> = new Set(['optimal_token_baseline', 'tir_optimal_token_baseline']);

/**
 * Like {@link stack} but over each row's response only (column 0 = the first token after the prompt), the
 * layout of verl's response tensors. The optimal token baseline compares rows position by position.
 */
function stackResponses(rows: readonly UpdateRow[], width: number, pick: (r: UpdateRow) => ArrayLike<number> | undefined): Float64Array {
  const out = new Float64Array(rows.length * width);
  rows.forEach((r, i) => {
    const a = pick(r);
    if (!a) return;
    for (let t = r.promptLength; t < a.length; t++) out[i * width + t - r.promptLength] = a[t];
  });
  return out;
}

/** Back from {@link stackResponses} to whole-row arrays (0 on the prompt). */
function unstackResponses(rows: readonly UpdateRow[], width: number, flat: ArrayLike<number>): Float32Array[] {
  return rows.map((r, i) => Float32Array.from({ length: r.ids.length }, (_, t) => (t < r.promptLength ? 0 : flat[i * width + t - r.promptLength])));
}

/**
 * Fraction of groups whose rewards differ, and the rows to train on: all of them, or with
 * `filter_groups` only those of such groups (a group whose rewards agree carries no GRPO signal).
 */
export function selectRows(rows: UpdateRow[], filterGroups: boolean): { rows: UpdateRow[]; mixedGroups: number } {
  const groups = new Set(rows.map((r) => r.group));
  if (groups.size === 0) return { rows: [], mixedGroups: 0 };
  const { keptUids, keptIndices } = filterGroupsByMetricStd(
    rows.map((r) => r.group),
    rows.map((r) => r.reward),
  );
  // A single-row group counts as kept by filterGroupsByMetricStd but it is not mixed.
  const sizes = new Map<number, number>();
  for (const r of rows) sizes.set(r.group, (sizes.get(r.group) ?? 0) + 1);
  const mixed = keptUids.filter((g) => (sizes.get(g as number) ?? 0) > 1).length;
  return { rows: filterGroups ? keptIndices.map((i) => rows[i]) : rows, mixedGroups: mixed / groups.size };
}

/**
 * Advantages (and returns) of every row with `@opentinker/rl`'s estimator named by `adv_estimator`,
 * groups by `row.group`. `gae` reads `row.values`; `remax` needs each row's greedy baseline reward; the
 * optimal token baselines read `row.oldLogProb` and `row.sumPiSquared` (see {@link scoreSumPiSquared}) and
 * get the rows laid out from their first response token, as verl's response tensors are.
 */
export function computeAdvantages(rows: UpdateRow[], algorithm: AlgorithmSpec, opts: { rewardBaselines?: number[] } = {}): void {
  if (rows.length === 0) return;
  const otb = OPTIMAL_TOKEN_BASELINES.has(algorithm.adv_estimator);
  if (otb && rows.some((r) => !r.sumPiSquared)) throw new Error(`${algorithm.adv_estimator} needs sum_pi_squared on every row (scoreSumPiSquared)`);
  const T = otb ? rows.reduce((m, r) => Math.max(m, r.ids.length - r.promptLength), 0) : maxLength(rows);
  const lay = otb ? stackResponses : stack;
  const gae = algorithm.adv_estimator === 'gae';
  if (gae && rows.some((r) => !r.values)) throw new Error('gae needs critic values on every row');
  const { advantages, returns } = computeAdvantage(
    {
      batch: rows.length,
      seqLen: T,
      tokenLevelRewards: lay(rows, T, (r) => r.rewards),
      responseMask: lay(rows, T, (r) => r.mask),
      index: rows.map((r) => r.group),
      ...(gae ? { values: stack(rows, T, (r) => r.values) } : {}),
      ...(algorithm.adv_estimator === 'grpo_per_step' ? { turnScores: rows.map((r) => r.turnRewards) } : {}),
      ...(opts.rewardBaselines ? { rewardBaselines: opts.rewardBaselines } : {}),
      ...(otb ? { oldLogProbs: lay(rows, T, (r) => r.oldLogProb), sumPiSquared: lay(rows, T, (r) => r.sumPiSquared) } : {}),
    },
    { adv_estimator: algorithm.adv_estimator, gamma: algorithm.gamma, lam: algorithm.lam, norm_adv_by_std_in_grpo: algorithm.norm_adv_by_std_in_grpo },
  );
  const adv = otb ? unstackResponses(rows, T, advantages) : unstack(rows, T, advantages);
  const ret = otb ? unstackResponses(rows, T, returns) : unstack(rows, T, returns);
  rows.forEach((r, i) => {
    r.advantages = adv[i];
    r.returns = ret[i];
  });
}

/**
 * `Σ_v π(v)²` per policy token under a model (temperature 1, the distribution the rollout log-probs are
 * taken from), token-aligned like {@link scoreRows}: entry t is about the distribution token t was drawn
 * from; 0 where `row.mask` is 0. verl's actor computes it with `calculate_sum_pi_squared_from_logits` for
 * the optimal-token-baseline estimators. One row per forward pass: the logits of a row are `length × vocab`.
 */
export function scoreSumPiSquared(model: Model, rows: UpdateRow[], o: { padId: number }): Float32Array[] {
  return rows.map((r) => {
    const batch = padBatch([r.ids], { padId: o.padId });
    const logits = model.logits(batch);
    let data: Float32Array;
    try {
      data = logits.dataSync() as Float32Array;
    } finally {
      logits.dispose();
    }
    const vocab = data.length / batch.seqLen;
    const out = new Float32Array(r.ids.length);
    // Position t - 1 predicts token t.
    for (let t = 1; t < r.ids.length; t++) {
      if (r.mask[t] !== 0) out[t] = sumPiSquaredFromLogits(data.subarray((t - 1) * vocab, t * vocab), 1, vocab)[0];
    }
    return out;
  });
}

/**
 * Per-token scores of rows under a model without gradients, `micro` rows per forward pass: log-probs
 * (of the base alone when `adapter` is false: the reference policy under LoRA) or critic values.
 */
export function scoreRows(model: Model, rows: UpdateRow[], o: { padId: number; micro: number; field: 'logProbs' | 'values'; adapter?: boolean }): Float32Array[] {
  const out: Float32Array[] = [];
  for (let i = 0; i < rows.length; i += o.micro) {
    const chunk = rows.slice(i, i + o.micro);
    const batch = padBatch(
      chunk.map((r) => r.ids),
      { padId: o.padId },
    );
    const s = model.scoreTokens(batch, { adapter: o.adapter ?? true });
    const flat = o.field === 'values' ? s.values : s.logProbs;
    if (!flat) throw new Error('The critic model has no value head');
    out.push(...unstack(chunk, batch.seqLen, flat));
  }
  return out;
}

/** Rows by group, groups in order of first appearance. */
function groupsOf(rows: readonly UpdateRow[]): UpdateRow[][] {
  const byGroup = new Map<number, UpdateRow[]>();
  for (const r of rows) {
    const list = byGroup.get(r.group);
    if (list) list.push(r);
    else byGroup.set(r.group, [r]);
  }
  return [...byGroup.values()];
}

/** Mini-batches of `tasks` groups each, groups in order of first appearance. */
export function miniBatches(rows: UpdateRow[], tasks: number): UpdateRow[][] {
  const groups = groupsOf(rows);
  const out: UpdateRow[][] = [];
  for (let i = 0; i < groups.length; i += tasks) out.push(groups.slice(i, i + tasks).flat());
  return out;
}

/** Rows of a group share at most this little of a prefix and train whole: the prefix's own passes would cost more than they save. */
const MIN_SHARED_PREFIX = 8;

/**
 * The group's rows after the prefix they all share (the prompt, as far as every row has it and no token
 * of it is trained), as views starting at the prefix's last token, and that prefix less its last token;
 * undefined when the group has one row or shares less than {@link MIN_SHARED_PREFIX} tokens. The last
 * shared token starts every view because its hidden state predicts the first trained token.
 */
export function sharedPrefixOf(rows: readonly UpdateRow[]): { prefix: number[]; rows: UpdateRow[] } | undefined {
  if (rows.length < 2) return undefined;
  const first = rows[0].ids;
  let n = first.length;
  for (const r of rows) {
    let i = 0;
    while (i < n && i < r.ids.length && r.ids[i] === first[i] && r.mask[i] === 0) i++;
    n = i;
  }
  // Every view keeps at least the last shared token; a trained token may not sit inside the prefix.
  const p = Math.min(n, ...rows.map((r) => r.ids.length)) - 1;
  if (p < MIN_SHARED_PREFIX) return undefined;
  const view = (r: UpdateRow): UpdateRow => {
    const cut = <T extends Float32Array | undefined>(a: T): T => a?.subarray(p) as T;
    return {
      ...r,
      ids: r.ids.slice(p),
      promptLength: Math.max(1, r.promptLength - p),
      mask: cut(r.mask),
      oldLogProb: cut(r.oldLogProb),
      rewards: cut(r.rewards),
      advantages: cut(r.advantages),
      returns: cut(r.returns),
      refLogProb: cut(r.refLogProb),
      values: cut(r.values),
      sumPiSquared: cut(r.sumPiSquared),
    };
  };
  return { prefix: first.slice(0, p), rows: rows.map(view) };
}

function chunks<T>(xs: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += size) out.push(xs.slice(i, i + size));
  return out;
}

export interface UpdateConfig {
  algorithm: AlgorithmSpec;
  padId: number;
  /** Tasks per optimizer step (`ppo_mini_batch_size`, default: all). */
  miniBatchTasks?: number;
  /** Sequences per forward/backward (`ppo_micro_batch_size`, default: the whole mini-batch). */
  microBatchSize?: number;
  /** The constant divisor of `seq-mean-token-sum-norm` (e.g. the response token budget). */
  lossScaleFactor: number;
  /** Random source of `clip_cov` (seeded by the runner). */
  random?: () => number;
  /** Checked between micro-batches: a cancelled job stops mid-update. */
  signal?: AbortSignal;
  /**
   * Train the rows of a group that continue one prompt with the prompt run once (`Trainer.sharedPrefix`;
   * the same gradients). Default true.
   */
  sharePrefixes?: boolean;
}

/** Where a micro-batch's passes go: the trainer itself, or the rows after a shared prefix. */
interface PassTarget {
  accumulate(batch: TokenBatch, coefficients: CoefficientSource): MicroBatchResult;
  microBatchRows(seqLen: number, rows: number): number;
}

export interface UpdateResult {
  /** `actor/*` (and `critic/vf_loss`) means over the step's micro-batches and optimizer steps. */
  metrics: Record<string, number>;
  /** Policy tokens that went through a forward/backward pass (all epochs). */
  trainedTokens: number;
  optimizerSteps: number;
  /** True when the signal stopped it before the end. */
  stopped: boolean;
}

/** Token-weighted running means of per-micro-batch metrics. */
class Means {
  private readonly sums = new Map<string, { sum: number; weight: number }>();
  /** A value that is absent (a loss mode without that metric) or not finite is skipped. */
  add(name: string, value: number | undefined, weight = 1): void {
    if (value === undefined || !Number.isFinite(value) || weight <= 0) return;
    const s = this.sums.get(name) ?? { sum: 0, weight: 0 };
    s.sum += value * weight;
    s.weight += weight;
    this.sums.set(name, s);
  }
  toRecord(): Record<string, number> {
    return Object.fromEntries([...this.sums].map(([k, s]) => [k, s.sum / s.weight]));
  }
}

/**
 * `ppo_epochs` passes over the rows, each in mini-batches of `ppo_mini_batch_size` tasks (one optimizer
 * step each) cut into micro-batches whose gradients accumulate (`ppo_micro_batch_size` rows, or fewer
 * when the engine's heap takes fewer at once). Losses are normalised over the whole
 * mini-batch (verl's global token / sequence counts), so micro-batching does not change the update.
 * Rows need `advantages`; `refLogProb` when `kl_loss_coef > 0`; `values` and `returns` with a critic.
 */
export function updatePolicy(actor: Trainer, rows: UpdateRow[], cfg: UpdateConfig, critic?: Trainer): UpdateResult {
  const a = cfg.algorithm;
  const lossFn = getPolicyLossFn(a.loss_mode);
  const mode = a.loss_agg_mode as LossAggMode;
  const useKl = a.kl_loss_coef > 0;
  for (const r of rows) {
    if (!r.advantages) throw new Error('updatePolicy needs advantages on every row (computeAdvantages)');
    if (useKl && !r.refLogProb) throw new Error('kl_loss_coef > 0 needs reference log-probs on every row');
    if (critic && (!r.values || !r.returns)) throw new Error('The critic needs values and returns on every row');
  }
  const means = new Means();
  let trainedTokens = 0;
  let optimizerSteps = 0;
  let lastLr = 0;
  for (let epoch = 0; epoch < a.ppo_epochs; epoch++) {
    for (const mini of miniBatches(rows, cfg.miniBatchTasks ?? Number.MAX_SAFE_INTEGER)) {
      let tokens = 0;
      let sequences = 0;
      for (const r of mini) {
        const k = r.mask.reduce((s, m) => s + m, 0);
        tokens += k;
        if (k > 0) sequences++;
      }
      if (tokens === 0) continue;
      const agg: AggOptions = { batchNumTokens: tokens, globalBatchSize: sequences, lossScaleFactor: cfg.lossScaleFactor };
      const actorConfig: ActorConfig = {
        clip_ratio: a.clip_ratio,
        clip_ratio_low: a.clip_ratio_low ?? null,
        clip_ratio_high: a.clip_ratio_high ?? null,
        clip_ratio_c: a.clip_ratio_c,
        tau_pos: a.tau_pos,
        tau_neg: a.tau_neg,
        loss_agg_mode: mode,
        policy_loss: { loss_mode: a.loss_mode },
        global_batch_info: { batch_num_tokens: tokens, global_batch_size: sequences, loss_scale_factor: cfg.lossScaleFactor },
      };
      let miniPg = 0;
      let miniKl = 0;
      let miniVf = 0;
      const trainMicro = (micro: UpdateRow[], actorPass: PassTarget, criticPass: PassTarget | undefined) => {
        const batch = padBatch(
          micro.map((r) => r.ids),
          { padId: cfg.padId },
        );
        const shape = { batch: batch.batchSize, seqLen: batch.seqLen };
        const T = batch.seqLen;
        const mask = stack(micro, T, (r) => r.mask);
        // Only the response's tokens carry a loss: the engine skips the head for the prompt's.
        batch.scored = Uint8Array.from(mask, (m) => (m !== 0 ? 1 : 0));
        const oldLogProb = stack(micro, T, (r) => r.oldLogProb);
        const advantages = stack(micro, T, (r) => r.advantages);
        const refLogProb = useKl ? stack(micro, T, (r) => r.refLogProb) : undefined;
        const microTokens = mask.reduce((s, m) => s + m, 0);
        const entropyCoef = a.entropy_coeff > 0 ? aggWeights(mask, shape, mode, agg).map((w) => -a.entropy_coeff * w) : undefined;
        const coefficients = (scores: CurrentScores): LossCoefficients => {
          const pl = lossFn({ ...shape, oldLogProb, logProb: scores.logProbs, advantages, responseMask: mask, ...(cfg.random ? { random: cfg.random } : {}) }, mode, actorConfig);
          const logProbCoef = pl.dLogProb;
          miniPg += pl.loss;
          means.add('actor/pg_clipfrac', pl.metrics['actor/pg_clipfrac'], microTokens);
          means.add('actor/ppo_kl', pl.metrics['actor/ppo_kl'], microTokens);
          if (refLogProb) {
            const kl = klLoss({ ...shape, logProb: scores.logProbs, refLogProb, responseMask: mask }, a.kl_loss_type, mode, agg);
            for (let i = 0; i < logProbCoef.length; i++) logProbCoef[i] += a.kl_loss_coef * kl.dLogProb[i];
            miniKl += kl.loss;
          }
          let entropySum = 0;
          for (let i = 0; i < mask.length; i++) entropySum += mask[i] * scores.entropy[i];
          means.add('actor/entropy', entropySum / microTokens, microTokens);
          return { logProbCoef, ...(entropyCoef ? { entropyCoef } : {}) };
        };
        actorPass.accumulate(batch, coefficients);
        trainedTokens += microTokens;
        if (criticPass) {
          const returns = stack(micro, T, (r) => r.returns);
          const values = stack(micro, T, (r) => r.values);
          criticPass.accumulate(batch, (scores) => {
            const v = computeValueLoss({ ...shape, vpreds: scores.values!, returns, values, responseMask: mask }, VALUE_CLIP, 'token-mean', agg);
            miniVf += v.loss;
            return { logProbCoef: new Float32Array(mask.length), valueCoef: v.dVpreds };
          });
        }
      };
      // Micro-batches as asked (ppo_micro_batch_size), never larger than the engine takes at once with
      // the least recomputation: losses are normalised over the mini-batch, so a smaller micro-batch
      // gives the same update. Returns false when cancelled.
      const trainRows = (rows: UpdateRow[], actorPass: PassTarget, criticPass: PassTarget | undefined): boolean => {
        if (rows.length === 0) return true;
        const longest = maxLength(rows);
        const fits = Math.min(actorPass.microBatchRows(longest, rows.length), criticPass ? criticPass.microBatchRows(longest, rows.length) : Infinity);
        // Rows of like length share a micro-batch, so its padding is short (the update does not depend on their order).
        const byLength = rows.map((r, i) => ({ r, i })).sort((a, b) => a.r.ids.length - b.r.ids.length || a.i - b.i);
        for (const micro of chunks(
          byLength.map((x) => x.r),
          Math.max(1, Math.min(cfg.microBatchSize ?? rows.length, fits)),
        )) {
          if (cfg.signal?.aborted) return false;
          trainMicro(micro, actorPass, criticPass);
        }
        return true;
      };
      // A group's samples continue one prompt: the prompt runs once for all of them.
      const whole: UpdateRow[] = [];
      let completed = true;
      for (const group of cfg.sharePrefixes === false ? [] : groupsOf(mini)) {
        const shared = sharedPrefixOf(group);
        if (!shared) {
          whole.push(...group);
          continue;
        }
        const actorGroup = actor.sharedPrefix(shared.prefix);
        const criticGroup = critic?.sharedPrefix(shared.prefix);
        try {
          completed = trainRows(shared.rows, actorGroup, criticGroup);
          if (!completed) break;
          actorGroup.finish();
          criticGroup?.finish();
        } finally {
          actorGroup.dispose();
          criticGroup?.dispose();
        }
      }
      if (cfg.sharePrefixes === false) whole.push(...mini);
      if (!completed || !trainRows(whole, actor, critic)) {
        actor.zeroGrad();
        critic?.zeroGrad();
        return { metrics: means.toRecord(), trainedTokens, optimizerSteps, stopped: true };
      }
      const step = actor.step();
      optimizerSteps++;
      lastLr = step.lr;
      means.add('actor/grad_norm', step.gradNorm);
      means.add('actor/pg_loss', miniPg);
      if (useKl) means.add('actor/kl_loss', miniKl);
      if (critic) {
        critic.step();
        means.add('critic/vf_loss', miniVf);
      }
    }
  }
  const metrics = means.toRecord();
  if (optimizerSteps > 0) metrics['actor/lr'] = lastLr;
  return { metrics, trainedTokens, optimizerSteps, stopped: false };
}
