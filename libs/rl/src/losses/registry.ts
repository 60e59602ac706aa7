/**
 * Registry of policy losses keyed by verl's `actor.policy_loss.loss_mode` (verl `register_policy_loss` /
 * `get_policy_loss_fn`); users can register their own.
 */
import type { LossAggMode } from '../aggregation';
import { computePolicyLossCispo } from './cispo';
import { computePolicyLossClipCov } from './clip-cov';
import { computePolicyLossGeoMean } from './geo-mean';
import { computePolicyLossGpg } from './gpg';
import { computePolicyLossGspo } from './gspo';
import { computePolicyLossKlCov } from './kl-cov';
import { computePolicyLossVanilla } from './policy-loss';
import { computePolicyLossReinforce } from './reinforce';
import { computePolicyLossSapo } from './sapo';
import type { ActorConfig, PolicyLossFn, PolicyLossInput, PolicyLossOutput } from './types';
import { RlError } from '../errors';

const registry = new Map<string, PolicyLossFn>();

/**
 * Registers a policy loss under a `loss_mode` name (replaces an existing entry, as verl's decorator does).
 *
 * @example
 * ```ts
 * registerPolicyLoss('reinforce', (input, mode, config) => computePolicyLossGpg(input, mode, config));
 * computePolicyLoss(input, { policy_loss: { loss_mode: 'reinforce' } });
 * ```
 */
export function registerPolicyLoss(name: string, fn: PolicyLossFn): void {
  registry.set(name, fn);
}

/**
 * Looks a policy loss up by name; throws for unknown names.
 *
 * @example
 * ```ts
 * const gspo = getPolicyLossFn('gspo');
 * ```
 */
export function getPolicyLossFn(name: string): PolicyLossFn {
  const fn = registry.get(name);
  if (!fn) throw new RlError('RL_UNKNOWN_NAME', `Unsupported loss mode: ${name}. Supported modes are: ${[...registry.keys()].join(', ')}`, 'policy_loss.loss_mode');
  return fn;
}

/**
 * Names currently registered.
 *
 * @example
 * ```ts
 * listPolicyLosses(); // ['vanilla', 'gspo', 'sapo', 'cispo', 'gpg', 'clip_cov', 'kl_cov', 'geo_mean', 'reinforce']
 * ```
 */
export function listPolicyLosses(): string[] {
  return [...registry.keys()];
}

/**
 * Computes the policy loss selected by `config.policy_loss.loss_mode` (default `vanilla`) with
 * `config.loss_agg_mode` (default `token-mean`, overridable by `lossAggMode`).
 *
 * @example
 * ```ts
 * const { loss, dLogProb, metrics } = computePolicyLoss(input, {
 *   clip_ratio_low: 0.2, clip_ratio_high: 0.28, clip_ratio_c: 3, loss_agg_mode: 'token-mean',
 *   policy_loss: { loss_mode: 'vanilla' },
 * });
 * ```
 */
export function computePolicyLoss(input: PolicyLossInput, config: ActorConfig = {}, lossAggMode?: LossAggMode): PolicyLossOutput {
  const mode = config.policy_loss?.loss_mode ?? 'vanilla';
  return getPolicyLossFn(mode)(input, lossAggMode ?? config.loss_agg_mode ?? 'token-mean', config);
}

registerPolicyLoss('vanilla', computePolicyLossVanilla);
registerPolicyLoss('gspo', computePolicyLossGspo);
registerPolicyLoss('sapo', computePolicyLossSapo);
registerPolicyLoss('cispo', computePolicyLossCispo);
registerPolicyLoss('gpg', computePolicyLossGpg);
registerPolicyLoss('clip_cov', computePolicyLossClipCov);
registerPolicyLoss('kl_cov', computePolicyLossKlCov);
registerPolicyLoss('geo_mean', computePolicyLossGeoMean);
// Not a verl loss_mode: verl calls compute_policy_loss_reinforce from bypass_mode only.
registerPolicyLoss('reinforce', computePolicyLossReinforce);
