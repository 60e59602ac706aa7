import { IpcMessageError, parseIpcMessage } from '../../core/ipc-message';
import { TinkerAnswered, TinkerRequest } from './tinker-ops';

const optimStep = {
  op: 'optim_step',
  args: { model: 'train-1', seq_id: 3, adam: { learning_rate: 1e-4, beta1: 0.9, beta2: 0.95, eps: 1e-12, weight_decay: 0, grad_clip_norm: 0 } },
};

describe('the tinker runner’s calls and answers, parsed on receipt', () => {
  it('takes a request whose args fit its op, typed by that op', () => {
    const req = parseIpcMessage(TinkerRequest, optimStep, 'the Tinker API');
    expect(req.op === 'optim_step' && req.args.adam.learning_rate).toBe(1e-4);
  });

  it('refuses an unknown op, args of another op, and an unknown field, naming the field', () => {
    expect(() => parseIpcMessage(TinkerRequest, { op: 'rm_rf', args: {} }, 'the Tinker API')).toThrow(IpcMessageError);
    expect(() => parseIpcMessage(TinkerRequest, { op: 'forward_backward', args: optimStep.args }, 'the Tinker API')).toThrow(/args\.loss_fn/);
    expect(() => parseIpcMessage(TinkerRequest, { ...optimStep, args: { ...optimStep.args, model: '../other' } }, 'the Tinker API')).toThrow(/args\.model/);
    expect(() => parseIpcMessage(TinkerRequest, { ...optimStep, args: { ...optimStep.args, extra: 1 } }, 'the Tinker API')).toThrow(/unknown field args\.extra/);
  });

  it('reads an answer back by its op; a float JSON could not carry (null) becomes NaN, a result of the wrong shape is refused', () => {
    const fb = {
      op: 'forward_backward',
      args: { model: 'train-1', seq_id: 1, loss_fn: 'cross_entropy', loss_fn_config: {}, forward_only: false, data: [{ tokens: [1, 2], inputs: { target_tokens: [2, 3] } }] },
      result: { outputs: [{ logprobs: [-0.5, null], elementwise_loss: [0.5, 1] }], metrics: { 'loss:sum': 1.5 } },
    };
    const done = parseIpcMessage(TinkerAnswered, fb, 'the runner');
    expect(done.op === 'forward_backward' && done.result.outputs[0].logprobs).toEqual([-0.5, NaN]);
    expect(() => parseIpcMessage(TinkerAnswered, { ...fb, result: { outputs: 'lots' } }, 'the runner')).toThrow(/result\.outputs/);
  });
});
