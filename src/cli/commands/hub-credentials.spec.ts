import { withHubToken } from './hub-credentials';

describe("a job's Hugging Face token from the submitting shell", () => {
  const spec = (model: Record<string, unknown>) => ({ kind: 'inference', model });

  it('fills model.hf_token from HF_TOKEN (or HUGGING_FACE_HUB_TOKEN) for an hf: model only, never over the spec', () => {
    const filled = withHubToken(spec({ path: 'hf:Org/Private' }), { HF_TOKEN: ' hf_mine ' });
    expect(filled.spec).toEqual(spec({ path: 'hf:Org/Private', hf_token: 'hf_mine' }));
    expect(filled.notes.join(' ')).not.toContain('hf_mine');
    expect(withHubToken(spec({ path: 'hf:Org/Private' }), { HUGGING_FACE_HUB_TOKEN: 'hf_old' }).spec).toEqual(spec({ path: 'hf:Org/Private', hf_token: 'hf_old' }));
    for (const model of [{ path: '/models/x' }, { preset: 'tiny-char' }, { path: 'job:abc' }, { path: 'hf:Org/P', hf_token: 'given' }]) {
      expect(withHubToken(spec(model), { HF_TOKEN: 'hf_mine' })).toEqual({ spec: spec(model), notes: [] });
    }
    expect(withHubToken(spec({ path: 'hf:Org/P' }), {})).toEqual({ spec: spec({ path: 'hf:Org/P' }), notes: [] });
  });
});
