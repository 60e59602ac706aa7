import { decodeForwardBackwardRequest, encodeForwardBackwardRequest, type DatumInput } from '@opentinker/tinker-wire';
import { checkLoss, datumsOf } from './tinker-datums';

const decode = (data: DatumInput[], lossFn = 'cross_entropy') => decodeForwardBackwardRequest(encodeForwardBackwardRequest({ modelId: 'm', seqId: 1, lossFn, data }));
const ints = (data: number[]) => ({ dtype: 'int64' as const, data });
const floats = (data: number[]) => ({ dtype: 'float32' as const, data });

describe('forward/backward datums as the runner takes them', () => {
  it('keeps tokens and each loss input as plain numbers; targets need not be the next input token', () => {
    const req = decode([{ modelInput: [1, 2, 3], lossFnInputs: { target_tokens: ints([0, 9, 4]), weights: floats([0, 1, 0.5]) } }]);
    expect(datumsOf(req, 'cross_entropy')).toEqual([{ tokens: [1, 2, 3], inputs: { target_tokens: [0, 9, 4], weights: [0, 1, 0.5] } }]);
  });

  it('scores cross_entropy with weights 1 where none were sent, leaving out inputs it does not take', () => {
    const req = decode([{ modelInput: [1, 2], lossFnInputs: { target_tokens: ints([2, 3]), advantages: floats([1, 1]) } }]);
    expect(datumsOf(req, 'cross_entropy')[0].inputs).toEqual({ target_tokens: [2, 3], weights: [1, 1] });
  });

  it.each([
    ['no targets', { modelInput: [1, 2], lossFnInputs: { weights: floats([1, 1]) } }, 'data[0].loss_fn_inputs.target_tokens'],
    ['an input of the wrong length', { modelInput: [1, 2], lossFnInputs: { target_tokens: ints([2, 3]), weights: floats([1]) } }, 'data[0].loss_fn_inputs.weights'],
    [
      '2-D targets',
      { modelInput: [1, 2], lossFnInputs: { target_tokens: { dtype: 'int64' as const, data: [2, 5, 3, 6], shape: [2, 2] } } },
      'data[0].loss_fn_inputs.target_tokens',
    ],
    ['a value that is not finite', { modelInput: [1, 2], lossFnInputs: { target_tokens: ints([2, 3]), weights: floats([1, Number.NaN]) } }, 'data[0].loss_fn_inputs.weights'],
    ['no tokens', { modelInput: [], lossFnInputs: { target_tokens: ints([]) } }, 'data[0].model_input'],
  ])('refuses %s, naming the field', (_, datum, field) => {
    expect(() => datumsOf(decode([datum as DatumInput]), 'cross_entropy')).toThrow(expect.objectContaining({ code: 'OT_ERR_VALIDATION', field }));
  });

  it('needs the inputs of the loss', () => {
    const req = decode([{ modelInput: [1, 2], lossFnInputs: { target_tokens: ints([2, 3]), logprobs: floats([0, -1]) } }], 'importance_sampling');
    expect(() => datumsOf(req, 'importance_sampling')).toThrow(
      expect.objectContaining({ field: 'data[0].loss_fn_inputs.advantages', message: expect.stringMatching(/importance_sampling needs/) }),
    );
  });

  it('refuses losses it does not compute, naming those it does, and config keys a loss does not take', () => {
    expect(checkLoss('ppo', { clip_low_threshold: 0.7 })).toBe('ppo');
    expect(() => checkLoss('stable_reinforce', {})).toThrow(expect.objectContaining({ field: 'loss_fn', message: expect.stringMatching(/importance_sampling/) }));
    expect(() => checkLoss('ppo', { beta: 1 })).toThrow(expect.objectContaining({ field: 'loss_fn_config.beta' }));
  });
});
