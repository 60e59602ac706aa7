import { decodeSampleResponse, GetSamplerResponse, UntypedAPIFuture } from '@opentinker/tinker-wire';
import { isOpenTinkerError } from '../errors';
import { parseAnswer, readWire, type TinkerContext } from './tinker-context';
import { detached, FutureGoneError, pollFuture } from './tinker-futures';
import { badResponse } from './tinker-http';
import {
  camelize,
  modelInputToWire,
  sampleResponseFromWire,
  samplingParamsToWire,
  type GetSamplerResponse as SamplerInfo,
  type ModelInput,
  type SampleResponse,
  type SamplingParams,
} from './tinker-types';

/** `sample`'s choices besides the prompt (the SDK's keyword arguments). */
export interface SampleOptions {
  /** Independent samples of the prompt (default 1). */
  numSamples?: number;
  samplingParams?: SamplingParams;
  /** Also give one log-prob per prompt token (`null` at position 0). */
  includePromptLogprobs?: boolean;
  /** Also give the `k` most likely tokens at each prompt position. */
  topkPromptLogprobs?: number;
  signal?: AbortSignal;
}

/** A 410 (the server dropped the request's promise) resubmits a sample up to this many times, as the SDK's retry handler does. */
const MAX_GONE_RESUBMITS = 3;
/** After a 429 to a sample (the server's backpressure), wait this long and send it again; longer for a large prompt (the SDK's 1 s and 5 s). */
const BACKPRESSURE_WAIT_MS = 1000;
const BACKPRESSURE_WAIT_LARGE_MS = 5000;
const LARGE_PROMPT_BYTES = 128 * 1024;

/**
 * Samples from one set of weights: an adapter snapshot (`TrainingClient.saveWeightsAndGetSamplingClient`),
 * a saved sampler checkpoint, or a base model alone (`ServiceClient.createSamplingClient`). Requests are
 * numbered from 0 per client and run concurrently; each is a future the client polls for you.
 *
 * @example
 * ```ts
 * const out = await sampler.sample(ModelInput.fromInts(prompt), { numSamples: 4, samplingParams: { maxTokens: 32, stop: ['\n'] } });
 * for (const s of out.sequences) console.log(s.tokens, s.logprobs, s.stopReason);
 * ```
 */
export class SamplingClient {
  private nextSeqId = 0;

  constructor(
    private readonly ctx: TinkerContext,
    /** The server's id of this sampler (`<session>:sample:<n>`). */
    readonly samplingSessionId: string,
  ) {}

  /**
   * Samples continuations of `prompt` (token in, token out). Each sequence comes with one log-prob per
   * token under the weights (temperature 1, no top-k or top-p): what `forward` gives for the same tokens.
   */
  sample(prompt: ModelInput | ArrayLike<number>, options: SampleOptions = {}): Promise<SampleResponse> {
    let body: Record<string, unknown>;
    try {
      body = {
        sampling_session_id: this.samplingSessionId,
        num_samples: options.numSamples ?? 1,
        prompt: modelInputToWire(prompt, 'prompt'),
        sampling_params: samplingParamsToWire(options.samplingParams ?? {}),
        prompt_logprobs: options.includePromptLogprobs ?? false,
        topk_prompt_logprobs: options.topkPromptLogprobs ?? 0,
        type: 'sample',
      };
    } catch (error) {
      return Promise.reject(error);
    }
    const large = JSON.stringify(body.prompt).length > LARGE_PROMPT_BYTES;
    return detached(this.run(body, large, options.signal));
  }

  /** The log-prob of each prompt token given the ones before it; `null` for the first. */
  async computeLogprobs(prompt: ModelInput | ArrayLike<number>, options: { signal?: AbortSignal } = {}): Promise<Array<number | null>> {
    const out = await this.sample(prompt, { numSamples: 1, samplingParams: { maxTokens: 1 }, includePromptLogprobs: true, signal: options.signal });
    if (!out.promptLogprobs) throw badResponse({ url: this.ctx.http.baseUrl }, 'a compute_logprobs sample came without prompt log-probs');
    return out.promptLogprobs;
  }

  /** The sampler's base model and, for a checkpoint, its path (`GET samplers/{id}`). */
  async getInfo(options: { signal?: AbortSignal } = {}): Promise<SamplerInfo> {
    const path = `samplers/${encodeURIComponent(this.samplingSessionId)}`;
    return camelize(parseAnswer(GetSamplerResponse, await this.ctx.http.json('GET', path, undefined, options), 'a sampler'));
  }

  private async run(body: Record<string, unknown>, large: boolean, signal: AbortSignal | undefined): Promise<SampleResponse> {
    for (let gone = 0; ; gone++) {
      const seqId = this.nextSeqId++;
      const future = await this.submit({ ...body, seq_id: seqId }, large, signal);
      try {
        const answer = await pollFuture(this.ctx.http, future.request_id, 'Sample', { signal, onQueueState: this.ctx.onQueueState });
        if (!('protobuf' in answer)) throw badResponse({ url: this.ctx.http.baseUrl }, 'a sample result came as JSON');
        return sampleResponseFromWire(
          readWire(() => decodeSampleResponse(answer.protobuf), this.ctx.http.baseUrl),
          future.sample_sequence_ids,
        );
      } catch (error) {
        if (!(error instanceof FutureGoneError) || gone >= MAX_GONE_RESUBMITS) throw error;
      }
    }
  }

  /** `asample`, with the HTTP layer's retries; sent again after the server's backpressure (a 429 past those) until it takes it. */
  private async submit(body: Record<string, unknown>, large: boolean, signal: AbortSignal | undefined): Promise<UntypedAPIFuture> {
    for (;;) {
      try {
        const answer = await this.ctx.http.json('POST', 'asample', body, { signal, headers: { 'x-tinker-sampling-backpressure': '1' } });
        return parseAnswer(UntypedAPIFuture, answer, 'the asample answer');
      } catch (error) {
        if (!isOpenTinkerError(error) || error.status !== 429) throw error;
        await this.ctx.http.sleep(large ? BACKPRESSURE_WAIT_LARGE_MS : BACKPRESSURE_WAIT_MS, signal);
      }
    }
  }
}
