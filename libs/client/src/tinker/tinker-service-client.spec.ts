import { fakeService } from '../testing/fake-tinker-server';
import type { OpenTinkerError } from '../errors';

const errorOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as OpenTinkerError,
  );

describe('ServiceClient', () => {
  it('creates one session, after the client config, for all its clients, and finishes it on close', async () => {
    const { fake, service } = fakeService({ tags: ['exp'], userMetadata: { who: 'me' } });
    const [a, b] = await Promise.all([service.createLoraTrainingClient({ baseModel: 'tiny-char' }), service.createSamplingClient({ baseModel: 'tiny-char' })]);
    expect(fake.seen.slice(0, 2).map((s) => s.path)).toEqual(['client/config', 'create_session']);
    expect(fake.sent('POST create_session')).toHaveLength(1);
    expect(fake.sent('POST create_session')[0].json).toMatchObject({ tags: ['exp'], user_metadata: { who: 'me' }, sdk_version: expect.any(String) });
    expect(a.modelId).toBe('sess:train:0');
    expect(b.samplingSessionId).toBe('sess:sample:0');
    await service.close('interrupted', { detail: 'ctrl-c' });
    expect(fake.sent('POST sessions/sess/finish').map((s) => s.json)).toEqual([{ reason: { type: 'interrupted' }, detail: 'ctrl-c' }]);
    await service.close();
    expect(fake.sent('POST sessions/sess/finish')).toHaveLength(1);
    expect(await errorOf(service.createLoraTrainingClient({ baseModel: 'tiny-char' }))).toMatchObject({ code: 'OT_ERR_SESSION_CLOSED', category: 'user' });
  });

  it('creates a LoRA training client with the SDK’s defaults, checks it with get_info, and numbers the session’s models', async () => {
    const { fake, service } = fakeService();
    await service.createLoraTrainingClient({ baseModel: 'tiny-char' });
    const second = await service.createLoraTrainingClient({ baseModel: 'hf:Qwen/Qwen2.5-0.5B', rank: 4, seed: 7, trainMlp: false, trainAttn: true, trainUnembed: false });
    const [one, two] = fake.sent('POST create_model').map((s) => s.json);
    expect(one).toMatchObject({ session_id: 'sess', model_seq_id: 0, base_model: 'tiny-char', lora_config: { rank: 32, train_mlp: true, train_attn: true, train_unembed: true } });
    expect(two).toMatchObject({ model_seq_id: 1, lora_config: { rank: 4, seed: 7, train_mlp: false, train_attn: true, train_unembed: false } });
    expect(second.modelId).toBe('sess:train:1');
    expect(fake.sent('POST get_info').map((s) => s.json.model_id)).toEqual(['sess:train:0', 'sess:train:1']);
  });

  it('creates a training client from a checkpoint with one load_weights, computing its id as the SDK does', async () => {
    const { fake, service } = fakeService();
    const tc = await service.createTrainingClientFromStateWithOptimizer('tinker://old:train:0/weights/ckpt');
    expect(fake.sent('POST load_weights')[0].json).toEqual({
      session_id: 'sess',
      model_seq_id: 0,
      path: 'tinker://old:train:0/weights/ckpt',
      optimizer: true,
      type: 'load_weights',
    });
    expect(tc.modelId).toBe('sess:train:0');
    await service.createTrainingClientFromState('tinker://old:train:0/weights/ckpt');
    expect(fake.sent('POST load_weights')[1].json).toMatchObject({ model_seq_id: 1, optimizer: false });
  });

  it('creates samplers from a checkpoint path or a base model, numbering them in the session', async () => {
    const { fake, service } = fakeService();
    await service.createSamplingClient({ modelPath: 'tinker://m/sampler_weights/a' });
    await service.createSamplingClient({ baseModel: 'tiny-char' });
    expect(fake.sent('POST create_sampling_session').map((s) => s.json)).toEqual([
      { session_id: 'sess', sampling_session_seq_id: 0, model_path: 'tinker://m/sampler_weights/a', type: 'create_sampling_session' },
      { session_id: 'sess', sampling_session_seq_id: 1, base_model: 'tiny-char', type: 'create_sampling_session' },
    ]);
  });

  it('beats while the session lives and stops at the first 410', async () => {
    const { fake, service } = fakeService({ heartbeatIntervalMs: 5 });
    fake.script('POST session_heartbeat', { json: {} }, { status: 410, json: { code: 'OT_ERR_GONE', message: 'session over' } });
    await service.sessionId();
    for (let i = 0; i < 500 && fake.sent('POST session_heartbeat').length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    // Ten more intervals: none goes after the 410.
    await new Promise((r) => setTimeout(r, 50));
    const beats = fake.sent('POST session_heartbeat');
    expect(beats.length).toBe(2);
    expect(beats[0].json).toEqual({ session_id: 'sess', type: 'session_heartbeat' });
    await service.close();
  });

  it('gives the capabilities in camelCase, and a create_model refusal as the server’s error', async () => {
    const { fake, service } = fakeService();
    expect(await service.getServerCapabilities()).toEqual({ supportedModels: [{ modelName: 'tiny-char', maxContextLength: 256 }] });
    fake.script('POST create_model', { status: 400, json: { code: 'OT_ERR_VALIDATION', message: 'rank is at most 1024', field: 'lora_config.rank' } });
    expect(await errorOf(service.createLoraTrainingClient({ baseModel: 'tiny-char', rank: 5000 }))).toMatchObject({ field: 'lora_config.rank', category: 'user' });
  });

  it('tries to create the session again after a failed attempt', async () => {
    const { fake, service } = fakeService();
    fake.script('POST create_session', { status: 400, json: { code: 'OT_ERR_LIMIT_EXCEEDED', message: 'You have 8 active Tinker sessions' } });
    expect(await errorOf(service.sessionId())).toMatchObject({ code: 'OT_ERR_LIMIT_EXCEEDED', category: 'user' });
    expect(await service.sessionId()).toBe('sess');
    expect(fake.sent('POST create_session')).toHaveLength(2);
  });
});
