/**
 * Tinker's built-in losses (the `loss_fn` of the Tinker SDK's `forward_backward`), with the SDK's
 * semantics: per datum, over every position, **summed** (not averaged) over tokens and datums; each
 * datum gets back the current log-probs and the per-token (`elementwise`) loss. Formulas and sources are
 * in the package README ("Tinker losses").
 *
 * A datum is one sequence: `logProbs[i]` (π) is the current log-prob of `target_tokens[i]`, and
 * `inputs` holds the datum's other `loss_fn_inputs` by the SDK's names (`weights`, `logprobs` — the
 * sampler's log-probs q —, `advantages`, `sequence_ratio_mask`, and optionally per-token
 * `clip_low_threshold` / `clip_high_threshold`), each with one value per position.
 */
import { RlError } from '../errors';

/** The losses this package computes, by the SDK's names. */
export const TINKER_LOSS_FNS = ['cross_entropy', 'importance_sampling', 'ppo', 'cispo', 'dro', 'gspo'] as const;

/** A loss the SDK can name, computed here. */
export type TinkerLossFn = (typeof TINKER_LOSS_FNS)[number];

/**
 * Names the SDK (0.38) accepts that no server outside Thinking Machines' can compute from what the SDK
 * sends: `stable_reinforce` needs per-sequence stability records that the hosted sampler keeps
 * (`record_stability_info`) and whose definition is not published; `custom` runs a loss uploaded with
 * `create_custom_loss`, which a server only sees when it advertises `custom_loss_server_side`.
 */
export const TINKER_UNSUPPORTED_LOSS_FNS = ['stable_reinforce', 'custom'] as const;

/** One datum of a forward/backward request, as the loss sees it. */
export interface TinkerLossDatum {
  /** π: log-prob of each target token under the current weights, `[N]`. */
  logProbs: ArrayLike<number>;
  /** The datum's `loss_fn_inputs` other than `target_tokens`, by name, each `[N]`. */
  inputs: Readonly<Record<string, ArrayLike<number>>>;
}

/** `loss_fn_config` as sent (numbers; `loss_fn_config_v2` may also carry text, which no built-in loss takes). */
export type TinkerLossConfig = Readonly<Record<string, number | string>>;

/** What a loss gives for one datum. */
export interface TinkerLossOutput {
  /** The datum's loss: the sum of `elementwiseLoss`. */
  loss: number;
  /** Loss per position, `[N]` (the SDK's `elementwise_loss` output). */
  elementwiseLoss: Float64Array;
  /** `d loss / d logProbs[i]` per position, `[N]`: the per-token coefficient the engine back-propagates. */
  dLogProb: Float64Array;
}

/** A loss's settings after defaults and checks. */
export interface ResolvedTinkerLossConfig {
  lossFn: TinkerLossFn;
  clipLow: number;
  clipHigh: number;
  beta: number;
}

interface LossSpec {
  required: readonly string[];
  optional: readonly string[];
  config: Readonly<Record<string, number>>;
}

const CLIP_INPUTS = ['clip_low_threshold', 'clip_high_threshold'] as const;
// `weights` is accepted and not used by the RL losses: Tinker's docs show it in RL datums, and their formulas do not read it.
const SPECS: Record<TinkerLossFn, LossSpec> = {
  cross_entropy: { required: ['weights'], optional: [], config: {} },
  importance_sampling: { required: ['logprobs', 'advantages'], optional: ['weights'], config: {} },
  ppo: { required: ['logprobs', 'advantages'], optional: ['weights', ...CLIP_INPUTS], config: { clip_low_threshold: 0.8, clip_high_threshold: 1.2 } },
  cispo: { required: ['logprobs', 'advantages'], optional: ['weights', ...CLIP_INPUTS], config: { clip_low_threshold: 0, clip_high_threshold: 4 } },
  dro: { required: ['logprobs', 'advantages'], optional: ['weights'], config: { beta: 0.1 } },
  gspo: {
    required: ['logprobs', 'advantages', 'sequence_ratio_mask'],
    optional: ['weights', ...CLIP_INPUTS],
    config: { clip_low_threshold: 1 - 3e-4, clip_high_threshold: 1 + 4e-4 },
  },
};

function lossFnOf(name: string): TinkerLossFn {
  if ((TINKER_LOSS_FNS as readonly string[]).includes(name)) return name as TinkerLossFn;
  const alternatives = 'importance_sampling, ppo, cispo, gspo or dro (cross_entropy for supervised data)';
  if (name === 'stable_reinforce') {
    throw new RlError(
      'RL_NOT_IMPLEMENTED',
      `loss_fn stable_reinforce is not available on this server: it needs stability records that only the hosted Tinker sampler keeps, and its definition is not published; use ${alternatives} (the cookbook's recipes take loss_fn=importance_sampling)`,
      'loss_fn',
    );
  }
  if (name === 'custom') {
    throw new RlError(
      'RL_NOT_IMPLEMENTED',
      'loss_fn custom (server-side custom losses) is not available on this server: use forward_backward_custom, which computes the loss in the client',
      'loss_fn',
    );
  }
  throw new RlError('RL_UNKNOWN_NAME', `loss_fn ${JSON.stringify(name)} is not one of ${TINKER_LOSS_FNS.join(', ')}`, 'loss_fn');
}

/**
 * Checks a loss name and its `loss_fn_config` and fills in the defaults. Keys a loss does not take and
 * values out of range are `RL_INVALID_CONFIG` naming the key; `stable_reinforce` and `custom` are
 * `RL_NOT_IMPLEMENTED` with the alternatives in the message; other names `RL_UNKNOWN_NAME`.
 *
 * @example
 * ```ts
 * resolveTinkerLossConfig('ppo', { clip_low_threshold: 0.9 }); // { lossFn: 'ppo', clipLow: 0.9, clipHigh: 1.2, beta: 0 }
 * ```
 */
export function resolveTinkerLossConfig(lossFn: string, config: TinkerLossConfig = {}): ResolvedTinkerLossConfig {
  const fn = lossFnOf(lossFn);
  const spec = SPECS[fn];
  const values: Record<string, number> = { ...spec.config };
  for (const [key, value] of Object.entries(config)) {
    if (!(key in spec.config)) {
      const takes = Object.keys(spec.config);
      throw new RlError('RL_INVALID_CONFIG', `loss_fn ${fn} takes no loss_fn_config key ${JSON.stringify(key)} (it takes ${takes.length ? takes.join(', ') : 'none'})`, key);
    }
    if (typeof value !== 'number' || !Number.isFinite(value))
      throw new RlError('RL_INVALID_CONFIG', `loss_fn_config ${key} must be a finite number, got ${JSON.stringify(value)}`, key);
    values[key] = value;
  }
  const clipLow = values.clip_low_threshold ?? 0;
  const clipHigh = values.clip_high_threshold ?? 0;
  if ('clip_low_threshold' in spec.config && !(clipLow >= 0 && clipHigh >= clipLow)) {
    throw new RlError('RL_INVALID_CONFIG', `clip thresholds must satisfy 0 <= clip_low_threshold <= clip_high_threshold, got ${clipLow} and ${clipHigh}`, 'clip_low_threshold');
  }
  const beta = values.beta ?? 0;
  if (!(beta >= 0)) throw new RlError('RL_INVALID_CONFIG', `beta must be >= 0, got ${beta}`, 'beta');
  return { lossFn: fn, clipLow, clipHigh, beta };
}

/**
 * Checks one datum's inputs for a loss: the required ones present, no unknown names, each `[n]` and
 * finite. Throws `RL_INVALID_INPUT` naming the input (and the datum, when `datum` is given).
 */
export function checkTinkerLossInputs(lossFn: TinkerLossFn, inputs: Readonly<Record<string, ArrayLike<number>>>, n: number, datum?: number): void {
  const spec = SPECS[lossFn];
  const where = datum === undefined ? '' : `datum ${datum}: `;
  const bad = (message: string, field: string): never => {
    throw new RlError('RL_INVALID_INPUT', `${where}${message}`, field);
  };
  for (const key of spec.required) if (inputs[key] === undefined) bad(`loss_fn ${lossFn} needs loss_fn_inputs ${key}`, key);
  for (const [key, values] of Object.entries(inputs)) {
    if (key === 'target_tokens') continue;
    if (!spec.required.includes(key) && !spec.optional.includes(key))
      bad(`loss_fn ${lossFn} takes no loss_fn_inputs ${key} (it takes ${[...spec.required, ...spec.optional].join(', ')})`, key);
    if (values.length !== n) bad(`loss_fn_inputs ${key} has ${values.length} values, expected ${n} (one per model_input token)`, key);
    for (let i = 0; i < values.length; i++) if (!Number.isFinite(values[i])) bad(`loss_fn_inputs ${key}[${i}] is not finite (${values[i]})`, key);
  }
}

/**
 * The gradient share of `min(u, c)` for the unclipped branch `u = ρ·A` and the clipped one
 * `c = clamp(ρ, lo, hi)·A`, as torch's `minimum` and `clamp` backward passes give it: the smaller branch
 * takes it all, a tie splits it in half, and the clipped branch passes a gradient only inside
 * `[lo, hi]` (bounds included).
 */
function minBranchGrad(rho: number, a: number, lo: number, hi: number): number {
  const u = rho * a;
  const c = Math.min(hi, Math.max(lo, rho)) * a;
  const inside = rho >= lo && rho <= hi ? 1 : 0;
  if (u < c) return a * rho;
  if (u > c) return a * rho * inside;
  return a * rho * 0.5 * (1 + inside);
}

/**
 * One datum's loss, per-token losses and per-token gradient for a Tinker `loss_fn` (see the README's
 * "Tinker losses" for each formula). Sums, not means: the batch's loss (`loss:sum`) is the sum over
 * datums. Positions with a zero advantage contribute exactly 0 to the RL losses' ratio terms.
 *
 * @example
 * ```ts
 * tinkerLoss('importance_sampling', { logProbs: [-1], inputs: { logprobs: [-1.5], advantages: [2] } });
 * // r = e^0.5: loss = -2·r ≈ -3.297, dLogProb = [-2·r]
 * ```
 */
export function tinkerLoss(lossFn: string, datum: TinkerLossDatum, config: TinkerLossConfig = {}): TinkerLossOutput {
  return datumLoss(resolveTinkerLossConfig(lossFn, config), datum);
}

function datumLoss(resolved: ResolvedTinkerLossConfig, datum: TinkerLossDatum): TinkerLossOutput {
  const fn = resolved.lossFn;
  const pi = datum.logProbs;
  const n = pi.length;
  for (let i = 0; i < n; i++) if (!Number.isFinite(pi[i])) throw new RlError('RL_INVALID_INPUT', `logProbs[${i}] is not finite (${pi[i]})`, 'logProbs');
  checkTinkerLossInputs(fn, datum.inputs, n);
  const elementwiseLoss = new Float64Array(n);
  const dLogProb = new Float64Array(n);
  const inp = datum.inputs;
  if (fn === 'cross_entropy') {
    const w = inp.weights;
    for (let i = 0; i < n; i++) {
      elementwiseLoss[i] = -w[i] * pi[i];
      dLogProb[i] = -w[i];
    }
  } else {
    const q = inp.logprobs;
    const A = inp.advantages;
    const lo = (i: number) => (inp.clip_low_threshold ? inp.clip_low_threshold[i] : resolved.clipLow);
    const hi = (i: number) => (inp.clip_high_threshold ? inp.clip_high_threshold[i] : resolved.clipHigh);
    let seqRatio = 0;
    if (fn === 'gspo') {
      const mask = inp.sequence_ratio_mask;
      let sum = 0;
      let count = 0;
      for (let i = 0; i < n; i++) {
        if (mask[i] === 0) continue;
        sum += pi[i] - q[i];
        count++;
      }
      if (count === 0)
        throw new RlError('RL_DEGENERATE_INPUT', 'sequence_ratio_mask marks no position: the sequence ratio is a mean over the marked positions', 'sequence_ratio_mask');
      seqRatio = Math.exp(sum / count);
    }
    for (let i = 0; i < n; i++) {
      const a = A[i];
      const delta = pi[i] - q[i];
      if (fn === 'dro') {
        elementwiseLoss[i] = -(pi[i] * a - 0.5 * resolved.beta * delta * delta);
        dLogProb[i] = -a + resolved.beta * delta;
        continue;
      }
      // A zero advantage zeroes the term even where the ratio overflows (torch would give 0·inf = NaN).
      if (a === 0) continue;
      const rho = fn === 'gspo' ? seqRatio : Math.exp(delta);
      if (fn === 'importance_sampling') {
        elementwiseLoss[i] = -rho * a;
        dLogProb[i] = -rho * a;
      } else if (fn === 'cispo') {
        const w = Math.min(hi(i), Math.max(lo(i), rho));
        elementwiseLoss[i] = -w * a * pi[i];
        dLogProb[i] = -w * a;
      } else {
        // ppo, and gspo with the sequence ratio in place of the token's.
        const l = lo(i);
        const h = hi(i);
        elementwiseLoss[i] = -Math.min(rho * a, Math.min(h, Math.max(l, rho)) * a);
        dLogProb[i] = -minBranchGrad(rho, a, l, h);
      }
    }
  }
  let loss = 0;
  for (let i = 0; i < n; i++) loss += elementwiseLoss[i];
  return { loss, elementwiseLoss, dLogProb };
}

/**
 * A whole request: every datum's loss and gradient, and their sum (the SDK's `loss:sum` metric). The
 * config is resolved once; an error names the datum.
 *
 * @example
 * ```ts
 * const { loss, outputs } = tinkerBatchLoss('ppo', datums, { clip_low_threshold: 0.8, clip_high_threshold: 1.28 });
 * ```
 */
export function tinkerBatchLoss(lossFn: string, datums: readonly TinkerLossDatum[], config: TinkerLossConfig = {}): { loss: number; outputs: TinkerLossOutput[] } {
  const resolved = resolveTinkerLossConfig(lossFn, config);
  let loss = 0;
  const outputs = datums.map((d, i) => {
    try {
      const out = datumLoss(resolved, d);
      loss += out.loss;
      return out;
    } catch (e) {
      if (e instanceof RlError) throw new RlError(e.code, `datum ${i}: ${e.message}`, e.field);
      throw e;
    }
  });
  return { loss, outputs };
}
