import { checkTinkerLossInputs, isRlError, resolveTinkerLossConfig, type TinkerLossFn } from '@opentinker/rl';
import { tensorAsFloat32, tensorAsInt32, type ForwardBackwardRequestPlain, type PlainTensor } from '@opentinker/tinker-wire';
import { AppError, ErrorCode } from '../core/app-error';
import type { OpDatum } from '../kinds/tinker/tinker-ops';

function invalid(field: string, message: string): AppError {
  return new AppError(ErrorCode.VALIDATION, `${field}: ${message}`, { field });
}

/** The loss and its config, checked; 400 naming the key (and, for a loss this server does not compute, the ones it does). */
export function checkLoss(lossFn: string, config: Record<string, number | string>): TinkerLossFn {
  try {
    return resolveTinkerLossConfig(lossFn, config).lossFn;
  } catch (error) {
    if (!isRlError(error)) throw error;
    throw invalid(error.field === 'loss_fn' || error.field === undefined ? 'loss_fn' : `loss_fn_config.${error.field}`, error.message);
  }
}

/**
 * A decoded forward/backward request's datums as the runner takes them, checked: text tokens, one target
 * per input token, and the loss inputs the loss takes, each one value per input token. `cross_entropy`
 * keeps `target_tokens` and `weights` (1 where absent, as the SDK's own examples send it) and leaves
 * any other input out, so a datum made for an RL loss can be scored with `forward`.
 */
export function datumsOf(req: ForwardBackwardRequestPlain, lossFn: TinkerLossFn): OpDatum[] {
  if (req.data.length === 0) throw invalid('data', 'no datums');
  return req.data.map((d, i) => {
    const at = `data[${i}]`;
    const n = d.tokens.length;
    if (n === 0) throw invalid(`${at}.model_input`, 'no tokens');
    const inputs: Record<string, number[]> = {};
    for (const [name, tensor] of Object.entries(d.lossFnInputs) as Array<[string, PlainTensor]>) {
      if (lossFn === 'cross_entropy' && name !== 'target_tokens' && name !== 'weights') continue;
      const field = `${at}.loss_fn_inputs.${name}`;
      if (tensor.shape.length !== 1)
        throw invalid(field, `shape [${tensor.shape.join(', ')}]: this server takes one value per input token (2-D inputs such as top-k targets are not supported)`);
      if (tensor.shape[0] !== n) throw invalid(field, `${tensor.shape[0]} values for ${n} input tokens`);
      inputs[name] = Array.from(name === 'target_tokens' ? tensorAsInt32(tensor, field) : tensorAsFloat32(tensor));
    }
    if (!inputs.target_tokens) throw invalid(`${at}.loss_fn_inputs.target_tokens`, 'required');
    if (inputs.target_tokens.some((t) => t < 0)) throw invalid(`${at}.loss_fn_inputs.target_tokens`, 'token ids are not negative');
    if (lossFn === 'cross_entropy' && !inputs.weights) inputs.weights = new Array<number>(n).fill(1);
    try {
      checkTinkerLossInputs(lossFn, inputs, n);
    } catch (error) {
      if (!isRlError(error)) throw error;
      throw invalid(`${at}.loss_fn_inputs${error.field ? `.${error.field}` : ''}`, error.message);
    }
    return { tokens: Array.from(d.tokens), inputs };
  });
}
