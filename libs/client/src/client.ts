import type { Client } from 'openapi-fetch';
import { DatasetsApi } from './api/datasets-api';
import type { DatasetSource, UploadDatasetOptions } from './api/datasets-api';
import { ChatApi } from './api/chat-api';
import { ModelsApi } from './api/models-api';
import { DevicesApi } from './api/devices-api';
import { EnvironmentsApi } from './api/environments-api';
import { HealthApi } from './api/health-api';
import { SessionsApi } from './api/sessions-api';
import { JobsApi, WaitForJobOptions } from './api/jobs-api';
import { KeysApi } from './api/keys-api';
import { UsersApi } from './api/users-api';
import type { paths } from './generated/schema';
import type { WatchJobOptions } from './job-watcher';
import { Transport, TransportOptions } from './transport';
import type { RequestOptions } from './api/request-options';
import type { ChatChunk, ChatCompletion, ChatRequest, Job, JobEvent, ModelList, UploadedDataset } from './types';

/** Options of {@link OpenTinkerClient}. */
export type OpenTinkerClientOptions = TransportOptions;

/**
 * The OpenTinker API from TypeScript, in Node (20+) and browsers: typed methods generated from the
 * server's OpenAPI document, errors as {@link OpenTinkerError} with the server's stable `code` and
 * `field`, retries for idempotent requests only, and job event streams that survive dropped connections.
 *
 * Methods are grouped by resource: `users`, `keys`, `jobs`, `datasets`, `environments`, `devices`, `health`.
 * `raw` is the generated client itself, for any route not wrapped here.
 *
 * @example
 * ```ts
 * import { OpenTinkerClient } from '@opentinker/client';
 *
 * const client = new OpenTinkerClient({ baseUrl: 'http://127.0.0.1:8780', apiKey: process.env.OPENTINKER_API_KEY });
 * const job = await client.jobs.submit({ kind: 'sleep', steps: 5, step_seconds: 0.2 });
 * for await (const event of client.watchJob(job.id)) {
 *   if (event.type === 'progress') console.log(`step ${event.data.step}/${event.data.total}`);
 * }
 * console.log((await client.jobs.get(job.id)).state); // 'succeeded'
 * ```
 */
export class OpenTinkerClient {
  readonly users: UsersApi;
  readonly keys: KeysApi;
  readonly jobs: JobsApi;
  readonly environments: EnvironmentsApi;
  readonly devices: DevicesApi;
  readonly health: HealthApi;
  /** Chat completions over checkpoints (`create`, `stream`, `models`); {@link chat} is the short form. */
  readonly chatApi: ChatApi;
  /** Models you can name, and the model folders you upload (`list`, `get`, `upload`, `delete`); {@link models} lists them too. */
  readonly modelsApi: ModelsApi;
  /** Client-driven training sessions (`start`, then `trainStep`, `validate`, `fit`, `sample`, `close`). */
  readonly sessions: SessionsApi;
  /** Uploaded datasets (`upload` streams a file, `list`, `get`, `preview`, `delete`). */
  readonly datasets: DatasetsApi;
  /** The generated openapi-fetch client (typed paths, bodies and answers), sharing auth and retries. */
  readonly raw: Client<paths>;
  /** The server's root URL, without a trailing slash. */
  readonly baseUrl: string;

  private readonly transport: Transport;

  constructor(options: OpenTinkerClientOptions) {
    this.transport = new Transport(options);
    this.baseUrl = this.transport.baseUrl;
    this.raw = this.transport.api;
    this.users = new UsersApi(this.transport);
    this.keys = new KeysApi(this.transport);
    this.jobs = new JobsApi(this.transport);
    this.environments = new EnvironmentsApi(this.transport);
    this.devices = new DevicesApi(this.transport);
    this.health = new HealthApi(this.transport);
    this.chatApi = new ChatApi(this.transport);
    this.modelsApi = new ModelsApi(this.transport);
    this.sessions = new SessionsApi(this.transport);
    this.datasets = new DatasetsApi(this.transport);
  }

  /**
   * A job's events as an async iterator (same as `jobs.watch`): reconnects with `Last-Event-ID` after a
   * dropped connection, so no event is lost or repeated, and ends after the `end` event.
   *
   * @example
   * ```ts
   * for await (const e of client.watchJob(id, { signal: AbortSignal.timeout(60_000) })) console.log(e.type, e.data);
   * ```
   */
  watchJob(id: string, options: WatchJobOptions = {}): AsyncGenerator<JobEvent, void, undefined> {
    return this.jobs.watch(id, options);
  }

  /**
   * Streams a dataset file to the server (same as `datasets.upload`): a path in Node, a `Blob`/`File`
   * in browsers, or any stream of bytes. Resolves with the dataset and the server's row report.
   *
   * @example
   * ```ts
   * const { dataset, report } = await client.uploadDataset('train.jsonl', { environment: 'math' });
   * if (report.invalid_rows) console.warn(report.bad_rows);
   * ```
   */
  uploadDataset(source: DatasetSource, options: UploadDatasetOptions): Promise<UploadedDataset> {
    return this.datasets.upload(source, options);
  }

  /**
   * Resolves with the job once it has ended (same as `jobs.wait`).
   *
   * @example
   * ```ts
   * const job = await client.waitForJob(id);
   * if (job.state !== 'succeeded') throw new Error(job.error ?? job.state);
   * ```
   */
  waitForJob(id: string, options: WaitForJobOptions = {}): Promise<Job> {
    return this.jobs.wait(id, options);
  }

  /**
   * Chat with a job's checkpoint, OpenAI style (`model`: `<job id>`, `<job id>/step-<n>` or a job
   * name). With `stream: true`, an async iterator of `chat.completion.chunk`s whose `delta.content`
   * pieces add up to the answer; otherwise the whole `chat.completion`.
   *
   * @example
   * ```ts
   * const done = await client.chat({ model: jobId, messages: [{ role: 'user', content: '2+2=' }], temperature: 0 });
   * for await (const chunk of client.chat({ model: jobId, messages, stream: true })) {
   *   process.stdout.write(chunk.choices[0]?.delta.content ?? '');
   * }
   * ```
   */
  chat(request: ChatRequest & { stream: true }, options?: RequestOptions): AsyncGenerator<ChatChunk, void, undefined>;
  chat(request: ChatRequest & { stream?: false }, options?: RequestOptions): Promise<ChatCompletion>;
  chat(request: ChatRequest, options: RequestOptions = {}): AsyncGenerator<ChatChunk, void, undefined> | Promise<ChatCompletion> {
    return request.stream ? this.chatApi.stream(request, options) : this.chatApi.create(request, options);
  }

  /** The checkpoints, uploaded models and Hub models the caller can name (OpenAI's model list). */
  models(options: RequestOptions = {}): Promise<ModelList> {
    return this.chatApi.models(options);
  }
}
