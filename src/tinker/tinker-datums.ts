import { tensorAsFloat32, tensorAsInt32, type ForwardBackwardRequestPlain, type PlainTensor } from '@opentinker/tinker-wire';
import { AppError, ErrorCode } from '../core/app-error';
import { isTinkerLoss, LOSS_INPUTS, TINKER_LOSSES, type OpDatum, type TinkerLoss } from '../jobs/kinds/tinker/tinker-ops';

/** Losses of the SDK that this server does not compute, and what to use instead. */
const OTHER_LOSSES: Record<string, string> = {
  stable_reinforce: 'its stability information is recorded by the hosted service’s samplers; pass loss_fn=importance_sampling (or ppo, cispo) to the cookbook’s RL loops',
  custom: 'server-side custom losses are off here; forward_backward_custom computes a custom loss on the client with the built-in ones',
};

function invalid(field: string, message: string): AppError {
  return new AppError(ErrorCode.VALIDATION, `${field}: ${message}`, { field });
}

/** The loss, or 400 naming the ones there are. */
export function checkLoss(lossFn: string): TinkerLoss {
  if (isTinkerLoss(lossFn)) return lossFn;
  const why = OTHER_LOSSES[lossFn];
  throw invalid('loss_fn', `${lossFn} is not available on this server${why ? ` (${why})` : ''}; use one of ${TINKER_LOSSES.join(', ')}`);
}

function finite(values: Float32Array, field: string): number[] {
  const out = Array.from(values);
  const bad = out.findIndex((v) => !Number.isFinite(v));
  if (bad !== -1) throw invalid(`${field}[${bad}]`, `${out[bad]} is not a finite number`);
  return out;
}

/**
 * A decoded forward/backward request's datums as the runner takes them, checked: text tokens, each loss
 * input one value per input token, the inputs the loss needs, and targets that are the input shifted by
 * one (the engine scores each input token's next token).
 */
export function datumsOf(req: ForwardBackwardRequestPlain, lossFn: TinkerLoss): OpDatum[] {
  if (req.data.length === 0) throw invalid('data', 'no datums');
  return req.data.map((d, i) => {
    const at = `data[${i}]`;
    const n = d.tokens.length;
    if (n === 0) throw invalid(`${at}.model_input`, 'no tokens');
    const inputs: Record<string, number[]> = {};
    for (const [name, tensor] of Object.entries(d.lossFnInputs) as Array<[string, PlainTensor]>) {
      const field = `${at}.loss_fn_inputs.${name}`;
      if (tensor.shape.length !== 1)
        throw invalid(field, `shape [${tensor.shape.join(', ')}]: this server takes one value per input token (2-D inputs such as top-k targets are not supported)`);
      if (tensor.shape[0] !== n) throw invalid(field, `${tensor.shape[0]} values for ${n} input tokens`);
      inputs[name] = name === 'target_tokens' ? Array.from(tensorAsInt32(tensor, field)) : finite(tensorAsFloat32(tensor), field);
    }
    const targets = inputs.target_tokens;
    if (!targets) throw invalid(`${at}.loss_fn_inputs.target_tokens`, 'required');
    for (let j = 0; j + 1 < n; j++) {
      if (targets[j] !== d.tokens[j + 1]) {
        throw invalid(
          `${at}.loss_fn_inputs.target_tokens[${j}]`,
          `${targets[j]} is not the next input token (${d.tokens[j + 1]}): this server trains each input token's next token, so target_tokens must be model_input shifted by one`,
        );
      }
    }
    for (const name of LOSS_INPUTS[lossFn].required) if (!inputs[name]) throw invalid(`${at}.loss_fn_inputs.${name}`, `required by ${lossFn}`);
    return { tokens: Array.from(d.tokens), inputs };
  });
}
