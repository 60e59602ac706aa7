import { decodeForwardBackwardRequest, encodeForwardBackwardOutput, encodeSampleResponse, PROTOBUF_CONTENT_TYPE, type ForwardBackwardRequestPlain } from '@opentinker/tinker-wire';
import type { FetchLike } from '../retrying-fetch';
import { TinkerHttp } from '../tinker/tinker-http';
import { ServiceClient, type ServiceClientOptions } from '../tinker/tinker-service-client';

/** One request the fake received. */
export interface SeenRequest {
  method: string;
  /** After `/api/v1/`, with the query. */
  path: string;
  headers: Record<string, string>;
  json?: any;
  /** A forward_backward body, decoded. */
  fb?: ForwardBackwardRequestPlain;
}

/** A scripted answer: a status with a JSON body (or none), protobuf bytes, a Response, or a refused connection. */
export type Answer = { status?: number; json?: unknown; protobuf?: Uint8Array; headers?: Record<string, string> } | Response | 'down';

/**
 * A Tinker server in memory for the client's specs (specs only): it answers every route the client uses
 * as the real one does, numbers futures `req-1`, `req-2`, …, and records what it was sent. `script` puts
 * answers in front of a route's own (`'POST optim_step'`, `'POST retrieve_future'`), used once each.
 */
export class FakeTinkerServer {
  readonly seen: SeenRequest[] = [];
  /** Answers to hand out before the route's own, by `METHOD path` (path without its query). */
  readonly scripted = new Map<string, Answer[]>();
  /** Results of the futures, by request id. */
  readonly results = new Map<string, Answer>();
  /** How many `try_again`s a future answers before its result. */
  tryAgains = 0;
  /** Called with each request's route before it is recorded (`'POST optim_step'`); what it returns is awaited (a slow answer). */
  before: (route: string) => Promise<void> | void = () => undefined;
  private polls = new Map<string, number>();
  private nextRequest = 0;

  readonly fetch: FetchLike = async (request) => {
    request.signal.throwIfAborted();
    const url = new URL(request.url);
    await this.before(`${request.method} ${url.pathname.replace(/^\/api\/v1\//, '')}`);
    const path = url.pathname.replace(/^\/api\/v1\//, '') + url.search;
    const headers: Record<string, string> = {};
    request.headers.forEach((v, k) => (headers[k] = v));
    const seen: SeenRequest = { method: request.method, path, headers };
    const bytes = new Uint8Array(await request.arrayBuffer());
    if (headers['content-type'] === PROTOBUF_CONTENT_TYPE) seen.fb = decodeForwardBackwardRequest(bytes);
    else if (bytes.length > 0) seen.json = JSON.parse(new TextDecoder().decode(bytes));
    this.seen.push(seen);
    const key = `${request.method} ${url.pathname.replace(/^\/api\/v1\//, '')}`;
    const queued = this.scripted.get(key)?.shift();
    return respond(queued ?? this.answer(key, seen));
  };

  /** Queues answers for a route (`'POST asample'`), used before its own. */
  script(route: string, ...answers: Answer[]): this {
    this.scripted.set(route, [...(this.scripted.get(route) ?? []), ...answers]);
    return this;
  }

  /** What was sent to a route (`'POST optim_step'`), in order. */
  sent(route: string): SeenRequest[] {
    return this.seen.filter((s) => `${s.method} ${s.path.split('?')[0]}` === route);
  }

  private future(result: Answer, extra: Record<string, unknown> = {}): Answer {
    const id = `req-${++this.nextRequest}`;
    this.results.set(id, result);
    return { json: { request_id: id, ...extra } };
  }

  private answer(key: string, seen: SeenRequest): Answer {
    const body = seen.json ?? {};
    switch (key) {
      case 'GET get_server_capabilities':
        return { json: { supported_models: [{ model_name: 'tiny-char', max_context_length: 256 }] } };
      case 'POST client/config':
        return { json: { pjwt_auth_enabled: false } };
      case 'POST create_session':
        return { json: { session_id: 'sess', type: 'create_session' } };
      case 'POST session_heartbeat':
        return { json: { type: 'session_heartbeat' } };
      case 'POST create_model':
        return this.future({ json: { model_id: `${body.session_id}:train:${body.model_seq_id}`, type: 'create_model' } });
      case 'POST get_info':
        return { json: { model_id: body.model_id, model_data: { model_name: 'tiny-char', tokenizer_id: null }, is_lora: true, lora_rank: 8 } };
      case 'POST forward_backward': {
        const fb = seen.fb!;
        const outputs = fb.data.map((d) => ({ logprobs: new Float32Array(d.tokens.length).fill(-0.5) }));
        return this.future({ protobuf: encodeForwardBackwardOutput({ lossFnOutputs: outputs, metrics: { 'loss:sum': fb.data.reduce((n, d) => n + d.tokens.length * 0.5, 0) } }) });
      }
      case 'POST optim_step':
        return this.future({ json: { metrics: { grad_norm: 1.5, learning_rate: body.adam_params.learning_rate } } });
      case 'POST save_weights':
        return this.future({ json: { path: `tinker://${body.model_id}/weights/${body.path}` } });
      case 'POST save_weights_for_sampler':
        return this.future({
          json: body.path ? { path: `tinker://${body.model_id}/sampler_weights/${body.path}` } : { sampling_session_id: `sess:sample:${body.sampling_session_seq_id}` },
        });
      case 'POST load_weights':
        return this.future({ json: { path: body.path, type: 'load_weights' } });
      case 'POST create_sampling_session':
        return { json: { sampling_session_id: `${body.session_id}:sample:${body.sampling_session_seq_id}` } };
      case 'POST asample': {
        const n = body.num_samples ?? 1;
        const prompt = body.prompt.chunks.flatMap((c: { tokens: number[] }) => c.tokens);
        const result = encodeSampleResponse({
          sequences: Array.from({ length: n }, (_, i) => ({ stopReason: 'length' as const, tokens: [100 + i, 101 + i], logprobs: [-0.25, -0.75] })),
          promptLogprobs: body.prompt_logprobs ? prompt.map((_: number, i: number) => (i === 0 ? null : -1 - i)) : undefined,
        });
        return this.future({ protobuf: result }, { sample_sequence_ids: Array.from({ length: n }, (_, i) => `${body.sampling_session_id}:seq:${body.seq_id}:${i}`) });
      }
      case 'POST retrieve_future': {
        const result = this.results.get(body.request_id);
        if (!result) return { status: 404, json: { code: 'OT_ERR_NOT_FOUND', message: `request ${body.request_id} not found`, field: 'request_id' } };
        const polls = this.polls.get(body.request_id) ?? 0;
        this.polls.set(body.request_id, polls + 1);
        if (polls < this.tryAgains) return { json: { type: 'try_again', request_id: body.request_id, queue_state: 'active' } };
        return result;
      }
      case 'POST sessions/sess/finish':
        return { json: {} };
      default:
        return { status: 404, json: { code: 'OT_ERR_ROUTE_NOT_FOUND', message: `Cannot ${key}` } };
    }
  }
}

function respond(answer: Answer): Response {
  if (answer === 'down') throw new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } });
  if (answer instanceof Response) return answer;
  if (answer.protobuf)
    return new Response(answer.protobuf as Uint8Array<ArrayBuffer>, { status: answer.status ?? 200, headers: { 'content-type': PROTOBUF_CONTENT_TYPE, ...answer.headers } });
  return new Response(answer.json === undefined ? null : JSON.stringify(answer.json), {
    status: answer.status ?? 200,
    headers: { 'content-type': 'application/json', ...answer.headers },
  });
}

/** A sleep that only records how long it was asked to wait (specs never wait). */
export function recordedSleep(): { waits: number[]; sleep: (ms: number, signal?: AbortSignal) => Promise<void> } {
  const waits: number[] = [];
  return {
    waits,
    sleep: async (ms, signal) => {
      if (signal?.aborted) throw signal.reason;
      waits.push(ms);
    },
  };
}

/** A service client on a fresh fake, waits recorded instead of slept (specs only). */
export function fakeService(options: Partial<ServiceClientOptions> = {}) {
  const fake = new FakeTinkerServer();
  const { waits, sleep } = recordedSleep();
  const http = new TinkerHttp({ baseUrl: 'http://tinker.test', fetch: fake.fetch }, sleep, () => 0);
  const service = new ServiceClient({ baseUrl: 'http://tinker.test', heartbeatIntervalMs: 60_000, ...options }, http);
  return { fake, waits, service };
}
