import { takeSecrets } from './job-secrets';

describe('takeSecrets', () => {
  it('takes the environment token, the W&B key and the Hugging Face token out of the spec, by dotted path', () => {
    const spec = {
      kind: 'train',
      environment: { id: 'math', url: 'http://env:8088', token: 'env-s3cret' },
      model: { path: 'hf:Org/Name', hf_token: 'hf-s3cret' },
      trainer: { logger: ['wandb'], wandb: { api_key: 'wb-s3cret', base_url: 'https://api.wandb.ai' } },
    };
    const taken = takeSecrets(spec);
    expect(taken.secrets).toEqual({ 'environment.token': 'env-s3cret', 'trainer.wandb.api_key': 'wb-s3cret', 'model.hf_token': 'hf-s3cret' });
    expect(taken.spec).toEqual({
      kind: 'train',
      environment: { id: 'math', url: 'http://env:8088' },
      model: { path: 'hf:Org/Name' },
      trainer: { logger: ['wandb'], wandb: { base_url: 'https://api.wandb.ai' } },
    });
    expect(JSON.stringify(taken.spec)).not.toMatch(/s3cret/);
    // The submitted object is left as it was.
    expect(spec.trainer.wandb.api_key).toBe('wb-s3cret');
  });

  it('leaves a spec without secrets as it is, whatever shape its other keys have', () => {
    for (const spec of [
      { kind: 'sleep', steps: 1 },
      { kind: 'train', trainer: { logger: [] } },
      { kind: 'train', trainer: 'x', environment: null },
    ]) {
      expect(takeSecrets(spec as Record<string, unknown>)).toEqual({ spec, secrets: {} });
    }
  });
});
