/**
 * verl's KL coefficient controllers (`FixedKLController`, `AdaptiveKLController`, `get_kl_controller`)
 * as small stateful objects; {@link updateKlCoef} is the same update as a pure function.
 */
import { RlError } from './errors';
import { updateKlCoef, type KlCtrlConfig } from './kl';

/**
 * A KL coefficient controller: `value` is the coefficient in force, `update` moves it after a step.
 *
 * @example
 * ```ts
 * const ctrl: KlController = getKlController({ type: 'fixed', kl_coef: 0.001 });
 * ```
 */
export interface KlController {
  /** The current coefficient (verl `kl_ctrl.value`). */
  readonly value: number;
  /** verl `update(current_kl, n_steps)`. */
  update(currentKl: number, nSteps: number): void;
}

/**
 * verl `get_kl_controller`: a fixed controller (`update` does nothing) or the adaptive one of Ziegler et
 * al. (2019), `value ← value · (1 + clip(current_kl / target - 1, ±0.2) · n_steps / horizon)`. An adaptive
 * controller needs `horizon > 0` (`RL_INVALID_CONFIG`, verl asserts); another `type` is `RL_UNKNOWN_NAME`
 * (verl raises `NotImplementedError`).
 *
 * @example
 * ```ts
 * const ctrl = getKlController({ type: 'adaptive', kl_coef: 0.05, target_kl: 0.01, horizon: 100 });
 * ctrl.update(0.07, 8);
 * ctrl.value; // 0.05 · (1 + 0.2 · 8 / 100)
 * ```
 */
export function getKlController(config: KlCtrlConfig): KlController {
  if (config.type !== 'fixed' && config.type !== 'adaptive') {
    throw new RlError('RL_UNKNOWN_NAME', `Unknown kl_ctrl.type: ${String(config.type)}`, 'kl_ctrl.type');
  }
  // Validates target_kl / horizon up front, as verl's constructor assert does.
  if (config.type === 'adaptive') updateKlCoef(config, config.kl_coef, 0, 0);
  let value = config.kl_coef;
  return {
    get value() {
      return value;
    },
    update(currentKl: number, nSteps: number) {
      value = updateKlCoef(config, value, currentKl, nSteps);
    },
  };
}
