import { matchTinkerRoute, TINKER_ROUTES } from './routes';
import { ModelInput, TensorData, TinkerPath, CheckpointName } from './schemas/common.schemas';
import { FutureRetrieveRequest, RequestFailedResponse, TryAgainResponse, UntypedAPIFuture } from './schemas/futures.schemas';
import { Checkpoint, ListQuery } from './schemas/rest.schemas';
import { SampleRequest, SamplingParams } from './schemas/sampling.schemas';
import { ClientConfigResponse, ClientSessionFinishRequest, RECOMMENDED_CLIENT_CONFIG } from './schemas/session.schemas';
import { CreateModelRequest, LoadWeightsRequest, OptimStepRequest, SaveWeightsForSamplerRequest } from './schemas/training.schemas';

/** The issues' paths, for asserting which field a refusal names. */
const paths = (result: { success: boolean; error?: { issues: Array<{ path: PropertyKey[] }> } }) => (result.success ? [] : result.error!.issues.map((i) => i.path.join('.')));

describe('JSON bodies: zod schemas named after the SDK types', () => {
  test('defaults fill what older SDKs leave out; unknown keys are dropped, not refused', () => {
    const model = CreateModelRequest.parse({ session_id: 's', model_seq_id: 0, base_model: 'Qwen/Qwen3-8B', lora_config: { rank: 8 }, from_a_newer_sdk: true });
    expect(model.optimizer_config).toEqual({ type: 'adamw' });
    expect(model.lora_config).toEqual({ rank: 8, train_unembed: true, train_mlp: true, train_attn: true });
    expect('from_a_newer_sdk' in model).toBe(false);
    expect(SampleRequest.parse({ prompt: { chunks: [] }, sampling_params: {} })).toMatchObject({
      num_samples: 1,
      topk_prompt_logprobs: 0,
      sampling_params: { temperature: 1, top_k: -1, top_p: 1 },
    });
    expect(FutureRetrieveRequest.parse({ request_id: 'r' }).allow_metadata_only).toBe(false);
  });

  test('malformed bodies are refused with the field named', () => {
    expect(paths(CreateModelRequest.safeParse({ session_id: 's', model_seq_id: -1, base_model: 'b' }))).toEqual(['model_seq_id']);
    expect(paths(CreateModelRequest.safeParse({ session_id: 's', model_seq_id: 0, base_model: 'b', lora_config: { rank: 0 } }))).toEqual(['lora_config.rank']);
    expect(paths(OptimStepRequest.safeParse({ model_id: 'm', adam_params: { learning_rate: -1 } }))).toEqual(['adam_params.learning_rate']);
    expect(paths(OptimStepRequest.safeParse({ model_id: 'm', adam_params: { beta2: 1 } }))).toEqual(['adam_params.beta2']);
    expect(paths(OptimStepRequest.safeParse({ model_id: 'm' }))).toEqual(['adam_params']);
    expect(paths(ModelInput.safeParse({ chunks: [{ type: 'encoded_text', tokens: [1, -2] }] }))).toEqual(['chunks.0.tokens.1']);
    expect(paths(ModelInput.safeParse({ chunks: [{ type: 'encoded_text', tokens: [2 ** 31] }] }))).toEqual(['chunks.0.tokens.0']);
    expect(paths(ModelInput.safeParse({ chunks: [{ type: 'video', tokens: [] }] }))).toEqual(['chunks.0.type']);
    expect(paths(SamplingParams.safeParse({ stop: [1, 'x'] }))).toEqual(['stop']);
    expect(paths(SamplingParams.safeParse({ top_p: 0 }))).toEqual(['top_p']);
    expect(paths(TensorData.safeParse({ data: [1], dtype: 'int64', sparse_crow_indices: [0, 1] }))).toEqual(['sparse_col_indices']);
    expect(paths(ClientSessionFinishRequest.safeParse({ reason: { type: 'done' } }))).toEqual(['reason.type']);
    expect(paths(SaveWeightsForSamplerRequest.safeParse({ model_id: 'm', path: 'a', sampling_session_seq_id: 0 }))).toEqual(['path']);
    expect(paths(SaveWeightsForSamplerRequest.safeParse({ model_id: 'm', path: 'a/b' }))).toEqual(['path']);
    expect(paths(LoadWeightsRequest.safeParse({ path: 'tinker://m/weights/a', optimizer: false }))).toEqual(['model_id']);
    expect(paths(LoadWeightsRequest.safeParse({ path: 'tinker://m/weights/a', optimizer: false, model_id: 'm', session_id: 's', model_seq_id: 1 }))).toEqual(['model_id']);
    expect(paths(LoadWeightsRequest.safeParse({ path: 'tinker://m/ckpt/a', optimizer: false, model_id: 'm' }))).toEqual(['path']);
  });

  test('tinker paths and checkpoint names follow the SDK parser: three parts, a known kind, no "/" in a name', () => {
    for (const ok of ['tinker://s:train:0/weights/ckpt-1', 'tinker://run/sampler_weights/000020', 'tinker://run/external_weights/final'])
      expect(TinkerPath.safeParse(ok).success).toBe(true);
    for (const bad of ['tinker://run/weights', 'tinker://run/weights/a/b', 'tinker://run/checkpoints/a', 'file:///etc/passwd', 'tinker:///weights/a'])
      expect([bad, TinkerPath.safeParse(bad).success]).toEqual([bad, false]);
    expect(CheckpointName.safeParse('step 10').success).toBe(true);
    expect(CheckpointName.safeParse('a\nb').success).toBe(false);
  });

  test('future answers: try_again needs a queue state, a failure a known category', () => {
    expect(TryAgainResponse.safeParse({ type: 'try_again', request_id: 'r', queue_state: 'active' }).success).toBe(true);
    expect(paths(TryAgainResponse.safeParse({ type: 'try_again', request_id: 'r', queue_state: 'busy' }))).toEqual(['queue_state']);
    expect(paths(RequestFailedResponse.safeParse({ error: 'bad lr', category: 'client' }))).toEqual(['category']);
    expect(UntypedAPIFuture.safeParse({ request_id: 'r', sample_sequence_ids: ['s:seq:0:0'] }).success).toBe(true);
    expect(Checkpoint.safeParse({ checkpoint_id: 'weights/a', checkpoint_type: 'training', time: '2026-12-05T12:00:00Z', tinker_path: 'tinker://m/weights/a' }).success).toBe(true);
    expect(ListQuery.parse({ limit: '20', offset: '0', access_scope: 'owned' })).toEqual({ limit: 20, offset: 0, access_scope: 'owned' });
    expect(ClientConfigResponse.parse(RECOMMENDED_CLIENT_CONFIG)).toEqual(RECOMMENDED_CLIENT_CONFIG);
  });
});

describe('route table', () => {
  test('matches paths with ids holding ":" and checkpoint ids holding "/"', () => {
    expect(matchTinkerRoute('DELETE', '/api/v1/training_runs/s:train:0/checkpoints/sampler_weights/final')?.params).toEqual({
      training_run_id: 's:train:0',
      checkpoint: 'sampler_weights/final',
    });
    expect(matchTinkerRoute('GET', '/api/v1/samplers/s%3Asample%3A1')?.params.sampler_id).toBe('s:sample:1');
    expect(matchTinkerRoute('POST', '/api/v1/sessions/abc/finish')?.route.request).toBe(ClientSessionFinishRequest);
    expect(matchTinkerRoute('GET', '/api/v1/training_runs/x/checkpoints/other/a')).toBeUndefined();
    expect(matchTinkerRoute('GET', '/api/v1/samplers/%E0%A4%A')).toBeUndefined();
    expect(matchTinkerRoute('PATCH', '/api/v1/create_model')).toBeUndefined();
  });

  test('every route is listed once', () => {
    const keys = TINKER_ROUTES.map((r) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
  });
});
