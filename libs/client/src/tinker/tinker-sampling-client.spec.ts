import { fakeService } from '../testing/fake-tinker-server';
import type { OpenTinkerError } from '../errors';
import { ModelInput } from './tinker-types';

const errorOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as OpenTinkerError,
  );

async function sampler() {
  const setup = fakeService();
  const sc = await setup.service.createSamplingClient({ baseModel: 'tiny-char' });
  return { ...setup, sc };
}

describe('SamplingClient', () => {
  it('sends the SDK’s sample request (numbered from 0, with backpressure) and gives sequences with their ids', async () => {
    const { fake, sc } = await sampler();
    const out = await sc.sample(ModelInput.fromInts([1, 2]), { numSamples: 2, samplingParams: { maxTokens: 5, stop: ['\n'], seed: 3, temperature: 0.7, topK: 20, topP: 0.9 } });
    await sc.sample([7]);
    const [first, second] = fake.sent('POST asample');
    expect(first.json).toEqual({
      sampling_session_id: 'sess:sample:0',
      seq_id: 0,
      num_samples: 2,
      prompt: { chunks: [{ type: 'encoded_text', tokens: [1, 2] }] },
      sampling_params: { max_tokens: 5, stop: ['\n'], seed: 3, temperature: 0.7, top_k: 20, top_p: 0.9 },
      prompt_logprobs: false,
      topk_prompt_logprobs: 0,
      type: 'sample',
    });
    expect(first.headers['x-tinker-sampling-backpressure']).toBe('1');
    expect(second.json).toMatchObject({ seq_id: 1, num_samples: 1, sampling_params: {} });
    expect(out.sequences).toEqual([
      { tokens: [100, 101], logprobs: [-0.25, -0.75], stopReason: 'length', sequenceId: 'sess:sample:0:seq:0:0' },
      { tokens: [101, 102], logprobs: [-0.25, -0.75], stopReason: 'length', sequenceId: 'sess:sample:0:seq:0:1' },
    ]);
    expect(out.promptLogprobs).toBeUndefined();
  });

  it('computes prompt log-probs as a one-token sample, null at position 0', async () => {
    const { fake, sc } = await sampler();
    expect(await sc.computeLogprobs([5, 6, 7])).toEqual([null, -2, -3]);
    expect(fake.sent('POST asample')[0].json).toMatchObject({ num_samples: 1, sampling_params: { max_tokens: 1 }, prompt_logprobs: true });
  });

  it('sends a sample again with a new seq_id when its future is gone (410), as the SDK’s retry handler does', async () => {
    const { fake, sc } = await sampler();
    fake.script('POST retrieve_future', { status: 410, json: { code: 'OT_ERR_GONE', message: 'promise expired' } });
    expect((await sc.sample([1])).sequences).toHaveLength(1);
    expect(fake.sent('POST asample').map((s) => s.json.seq_id)).toEqual([0, 1]);
    // Other requests' gone futures fail.
    fake.script('POST retrieve_future', ...Array(4).fill({ status: 410, json: { code: 'OT_ERR_GONE', message: 'runner ended' } }));
    expect(await errorOf(sc.sample([1]))).toMatchObject({ status: 410, code: 'OT_ERR_GONE' });
  });

  it('waits out the server’s backpressure (429 past the HTTP retries) and sends again', async () => {
    const { fake, waits, sc } = await sampler();
    fake.script('POST asample', ...Array(11).fill({ status: 429 }));
    expect((await sc.sample([1])).sequences).toHaveLength(1);
    expect(fake.sent('POST asample')).toHaveLength(12);
    expect(waits.at(-1)).toBe(1000);
  });

  it('refuses a prompt with a token that is not a token id before sending it', async () => {
    const { fake, sc } = await sampler();
    expect(await errorOf(sc.sample([1, 2 ** 31]))).toMatchObject({ code: 'OT_ERR_INVALID_INPUT', field: 'prompt.chunks[0].tokens[1]' });
    expect(fake.sent('POST asample')).toHaveLength(0);
  });

  it('reads its sampler’s base model', async () => {
    const { fake, sc } = await sampler();
    fake.script('GET samplers/sess%3Asample%3A0', { json: { sampler_id: 'sess:sample:0', base_model: 'tiny-char', model_path: null } });
    expect(await sc.getInfo()).toEqual({ samplerId: 'sess:sample:0', baseModel: 'tiny-char', modelPath: null });
  });
});
