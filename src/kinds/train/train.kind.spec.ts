import { trainKind } from './train.kind';

const TURNS = ['```py\nprint({extra_info.expression})\n```', '\\boxed{{ground_truth}}'];

describe('sft.turns in the train spec', () => {
  const base = { kind: 'train', environment: { id: 'math-tool' }, model: { preset: 'tiny-char' } };

  it('is accepted alone and stored as given', () => {
    const spec = trainKind.parse({ ...base, sft: { steps: 5, turns: TURNS } });
    expect(spec.sft).toMatchObject({ steps: 5, turns: TURNS, target: '{ground_truth}' });
  });

  it('is refused with a non-default target, or empty', () => {
    expect(() => trainKind.parse({ ...base, sft: { target: '\\boxed{{ground_truth}}', turns: TURNS } })).toThrow(
      expect.objectContaining({ code: 'OT_ERR_VALIDATION', field: 'sft.turns' }),
    );
    expect(() => trainKind.parse({ ...base, sft: { turns: [] } })).toThrow(expect.objectContaining({ field: 'sft.turns' }));
    expect(() => trainKind.parse({ ...base, sft: { turns: [''] } })).toThrow(expect.objectContaining({ field: 'sft.turns.0' }));
  });

  it('turns_repeat_last defaults to false and needs turns', () => {
    expect(trainKind.parse({ ...base, sft: { turns: TURNS } })).toMatchObject({ sft: { turns_repeat_last: false } });
    expect(trainKind.parse({ ...base, sft: { turns: TURNS, turns_repeat_last: true } })).toMatchObject({ sft: { turns_repeat_last: true } });
    expect(() => trainKind.parse({ ...base, sft: { turns_repeat_last: true } })).toThrow(expect.objectContaining({ field: 'sft.turns_repeat_last' }));
  });
});
