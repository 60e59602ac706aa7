import { fakeService } from '../testing/fake-tinker-server';
import type { OpenTinkerError } from '../errors';
import { ModelInput, type Datum } from './tinker-types';

const errorOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as OpenTinkerError,
  );

const DATUM: Datum = { modelInput: ModelInput.fromInts([1, 2, 3]), lossFnInputs: { target_tokens: [2, 3, 4], weights: [1, 1, 0.5] } };

async function training(options: Parameters<typeof fakeService>[0] = {}) {
  const setup = fakeService(options);
  const tc = await setup.service.createLoraTrainingClient({ baseModel: 'tiny-char' });
  return { ...setup, tc };
}

describe('TrainingClient', () => {
  it('numbers its requests 1, 2, 3 … and submits them in the order of the calls, each after the one before was answered', async () => {
    const { fake, tc } = await training();
    // The first submission is slow to be answered; the next must not overtake it.
    let slow = true;
    fake.before = async (route) => {
      if (route === 'POST forward_backward' && slow) {
        slow = false;
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const fb = tc.forwardBackward([DATUM], 'cross_entropy');
    const opt = tc.optimStep({ learningRate: 0.01 });
    const fwd = tc.forward([DATUM], 'cross_entropy');
    const [out, step] = await Promise.all([fb, opt, fwd]);
    expect(out.metrics['loss:sum']).toBe(1.5);
    expect(Array.from(out.lossFnOutputs[0].logprobs.data as Float32Array)).toEqual([-0.5, -0.5, -0.5]);
    expect(step.metrics).toEqual({ grad_norm: 1.5, learning_rate: 0.01 });
    const submissions = fake.seen.filter((s) => s.path !== 'retrieve_future').slice(-3);
    expect(submissions.map((s) => s.path)).toEqual(['forward_backward', 'optim_step', 'forward_backward']);
    expect(fake.sent('POST forward_backward').map((s) => [s.fb!.seqId, s.fb!.forwardOnly])).toEqual([
      [1, false],
      [3, true],
    ]);
    expect(fake.sent('POST optim_step')[0].json).toEqual({
      model_id: 'sess:train:0',
      seq_id: 2,
      adam_params: { learning_rate: 0.01, beta1: 0.9, beta2: 0.95, eps: 1e-12, weight_decay: 0, grad_clip_norm: 0 },
      type: 'optim_step',
    });
  });

  it('sends datums as protobuf: target_tokens int64, other plain arrays float32, explicit tensors as given, the loss config', async () => {
    const { fake, tc } = await training();
    await tc.forwardBackward(
      [
        DATUM,
        {
          modelInput: [5, 6],
          lossFnInputs: { target_tokens: { data: [6, 7], dtype: 'int64' }, advantages: { data: [0.5, -0.5], dtype: 'float32', shape: [2] }, logprobs: new Float32Array([-1, -2]) },
        },
      ],
      'ppo',
      { lossFnConfig: { clip_low_threshold: 0.8, clip_high_threshold: 1.2 } },
    );
    const fb = fake.sent('POST forward_backward')[0].fb!;
    expect(fb).toMatchObject({ modelId: 'sess:train:0', lossFn: 'ppo', forwardOnly: false });
    expect({ ...fb.lossFnConfig }).toEqual({ clip_low_threshold: 0.8, clip_high_threshold: 1.2 });
    expect(Array.from(fb.data[0].tokens)).toEqual([1, 2, 3]);
    expect(fb.data[0].lossFnInputs.target_tokens).toMatchObject({ dtype: 'int64', shape: [3], data: BigInt64Array.from([2n, 3n, 4n]) });
    expect(fb.data[0].lossFnInputs.weights).toMatchObject({ dtype: 'float32', data: Float32Array.from([1, 1, 0.5]) });
    expect(fb.data[1].lossFnInputs.advantages).toMatchObject({ dtype: 'float32', shape: [2] });
    expect(fb.data[1].lossFnInputs.logprobs.data).toEqual(Float32Array.from([-1, -2]));
  });

  it('cuts a batch larger than the client config’s chunk into requests with consecutive seq_ids, and merges their results', async () => {
    const { fake, service } = fakeService();
    fake.script('POST client/config', { json: { fwdbwd_max_chunk_len: 2 } });
    const tc = await service.createLoraTrainingClient({ baseModel: 'tiny-char' });
    const out = await tc.forwardBackward([DATUM, DATUM, DATUM, DATUM, DATUM], 'cross_entropy');
    const opt = await tc.optimStep({});
    expect(fake.sent('POST forward_backward').map((s) => [s.fb!.seqId, s.fb!.data.length])).toEqual([
      [1, 2],
      [2, 2],
      [3, 1],
    ]);
    expect(fake.sent('POST optim_step')[0].json.seq_id).toBe(4);
    expect(opt.metrics?.grad_norm).toBe(1.5);
    expect(out.lossFnOutputs).toHaveLength(5);
    expect(out.metrics['loss:sum']).toBe(7.5);
  });

  it('gives a refused request the server’s error (user category), and goes on with the next seq_id', async () => {
    const { fake, tc } = await training();
    fake.script('POST optim_step', { status: 400, json: { code: 'OT_ERR_VALIDATION', message: 'learning_rate must be at least 0', field: 'adam_params.learning_rate' } });
    const refused = tc.optimStep({ learningRate: -1 });
    const next = tc.forward([DATUM], 'cross_entropy');
    expect(await errorOf(refused)).toMatchObject({ status: 400, category: 'user', field: 'adam_params.learning_rate' });
    await next;
    expect(fake.sent('POST forward_backward')[0].fb!.seqId).toBe(2);
  });

  it('refuses a datum it cannot encode before sending anything, without using a seq_id', async () => {
    const { fake, tc } = await training();
    const bad = await errorOf(tc.forward([{ modelInput: [1, 2.5], lossFnInputs: { target_tokens: [1, 2] } }], 'cross_entropy'));
    expect(bad).toMatchObject({ code: 'OT_ERR_INVALID_INPUT', category: 'user', field: 'data[0].model_input.chunks[0].tokens[1]' });
    const shape = await errorOf(tc.forward([{ modelInput: [1, 2], lossFnInputs: { weights: { data: [1, 1], dtype: 'float32', shape: [3] } } }], 'cross_entropy'));
    expect(shape).toMatchObject({ code: 'OT_ERR_INVALID_INPUT', field: 'data[0].loss_fn_inputs.weights' });
    const target = await errorOf(tc.forward([{ modelInput: [1, 2], lossFnInputs: { target_tokens: [1.5, 2] } }], 'cross_entropy'));
    expect(target).toMatchObject({ code: 'OT_ERR_INVALID_INPUT', field: expect.stringMatching(/target_tokens/) });
    await tc.forward([DATUM], 'cross_entropy');
    expect(fake.sent('POST forward_backward').map((s) => s.fb!.seqId)).toEqual([1]);
  });

  it('saves state and sampler weights by name, loads state, and makes samplers of snapshots numbered in the session', async () => {
    const { fake, service, tc } = await training();
    expect(await tc.saveState('ckpt', { ttlSeconds: 3600 })).toEqual({ path: 'tinker://sess:train:0/weights/ckpt' });
    expect(await tc.saveWeightsForSampler('s1')).toEqual({ path: 'tinker://sess:train:0/sampler_weights/s1' });
    await tc.saveState('ckpt', { overwrite: true });
    await service.createSamplingClient({ baseModel: 'tiny-char' });
    const snapshot = await tc.saveWeightsAndGetSamplingClient();
    expect(snapshot.samplingSessionId).toBe('sess:sample:1');
    const named = await tc.saveWeightsAndGetSamplingClient({ name: 'final' });
    expect(named.samplingSessionId).toBe('sess:sample:2');
    expect(await tc.loadStateWithOptimizer('tinker://sess:train:0/weights/ckpt')).toMatchObject({ path: 'tinker://sess:train:0/weights/ckpt' });
    expect(fake.sent('POST save_weights')[0].json).toEqual({ model_id: 'sess:train:0', seq_id: 1, path: 'ckpt', ttl_seconds: 3600, type: 'save_weights' });
    expect(fake.sent('POST save_weights_for_sampler').map((s) => s.json)).toEqual([
      { model_id: 'sess:train:0', seq_id: 2, path: 's1', type: 'save_weights_for_sampler' },
      { model_id: 'sess:train:0', seq_id: 4, sampling_session_seq_id: 1, type: 'save_weights_for_sampler' },
      { model_id: 'sess:train:0', seq_id: 5, path: 'final', type: 'save_weights_for_sampler' },
    ]);
    expect(fake.sent('POST create_sampling_session')[1].json).toMatchObject({ sampling_session_seq_id: 2, model_path: 'tinker://sess:train:0/sampler_weights/final' });
    expect(fake.sent('POST save_weights')[1].json).toMatchObject({ seq_id: 3, path: 'ckpt', overwrite: true });
    expect(fake.sent('POST load_weights')[0].json).toEqual({
      model_id: 'sess:train:0',
      seq_id: 6,
      path: 'tinker://sess:train:0/weights/ckpt',
      optimizer: true,
      type: 'load_weights',
    });
  });

  it('answers get_info in camelCase and the tokenizer id as the SDK picks it', async () => {
    const { fake, tc } = await training();
    expect(await tc.getInfo()).toMatchObject({ modelId: 'sess:train:0', isLora: true, loraRank: 8, modelData: { modelName: 'tiny-char', tokenizerId: null } });
    expect(await tc.getTokenizerId()).toBe('tiny-char');
    fake.script('POST get_info', { json: { model_id: 'sess:train:0', model_data: { model_name: 'Qwen/Qwen2.5-0.5B', tokenizer_id: 'Qwen/Qwen2.5-0.5B-Instruct' } } });
    expect(await tc.getTokenizerId()).toBe('Qwen/Qwen2.5-0.5B-Instruct');
  });

  it('sends every chunk of a batch even when one is refused, then fails with the refusal', async () => {
    const { fake, service } = fakeService();
    fake.script('POST client/config', { json: { fwdbwd_max_chunk_len: 1 } });
    const tc = await service.createLoraTrainingClient({ baseModel: 'tiny-char' });
    fake.script('POST forward_backward', { json: { request_id: 'r-a' } }, { status: 400, json: { code: 'OT_ERR_VALIDATION', message: 'bad datum', field: 'data[0]' } });
    expect(await errorOf(tc.forward([DATUM, DATUM, DATUM], 'cross_entropy'))).toMatchObject({ status: 400, field: 'data[0]' });
    expect(fake.sent('POST forward_backward').map((s) => s.fb!.seqId)).toEqual([1, 2, 3]);
  });

  it('says a result it cannot read is a bad response', async () => {
    const { fake, tc } = await training();
    fake.script('POST forward_backward', { json: { request_id: 'garbled' } });
    fake.results.set('garbled', { protobuf: new Uint8Array([0xff, 0xff, 0xff]) });
    expect(await errorOf(tc.forward([DATUM], 'cross_entropy'))).toMatchObject({ code: 'OT_ERR_BAD_RESPONSE', category: 'server' });
  });
});
