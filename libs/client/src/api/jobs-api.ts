import { isOpenTinkerError, OpenTinkerError } from '../errors';
import { watchJobEvents, WatchJobOptions } from '../job-watcher';
import type { Transport } from '../transport';
import type { Artifact, Checkpoint, Job, JobEvent, JobKindInfo, JobPage, JobSpec, ListJobsQuery, MetricPoint, MetricsQuery } from '../types';
import type { RequestOptions } from './request-options';

/** Options of {@link JobsApi.wait}. */
export interface WaitForJobOptions extends WatchJobOptions {
  /** Sees every event on the way (progress, metrics, logs). */
  onEvent?: (event: JobEvent) => void;
}

/**
 * Jobs (`/v1/jobs`): submit, inspect, follow, cancel, and read what they produced. A plain user sees
 * their own jobs; an admin sees everyone's. Another user's job is "not found".
 *
 * @example
 * ```ts
 * const job = await client.jobs.submit({ kind: 'sleep', name: 'hello', steps: 5, step_seconds: 0.5 });
 * const done = await client.jobs.wait(job.id, { onEvent: (e) => e.type === 'log' && console.log(e.data.text) });
 * console.log(done.state); // 'succeeded'
 * ```
 */
export class JobsApi {
  constructor(private readonly t: Transport) {}

  /**
   * Submits a job spec; the answer holds the stored spec with every default filled in. Not retried:
   * a second attempt after a lost answer could start the job twice.
   */
  submit(spec: JobSpec, options: RequestOptions = {}): Promise<Job> {
    return this.t.call(this.t.api.POST('/v1/jobs', { body: spec, signal: options.signal }), options.signal);
  }

  /** Jobs, newest first, as summaries (no `spec`: {@link JobsApi.get} has it). */
  list(query: ListJobsQuery = {}, options: RequestOptions = {}): Promise<JobPage> {
    return this.t.call(
      // The server reads `state=queued,running`.
      this.t.api.GET('/v1/jobs', { params: { query: { ...query, state: query.state?.join(',') } }, signal: options.signal }),
      options.signal,
    );
  }

  /** The kinds of job the server runs, with what their jobs can do (checkpoints, a results file, session calls, …). */
  kinds(options: RequestOptions = {}): Promise<JobKindInfo[]> {
    return this.t.call(this.t.api.GET('/v1/job-kinds', { signal: options.signal }), options.signal);
  }

  get(id: string, options: RequestOptions = {}): Promise<Job> {
    return this.t.call(this.t.api.GET('/v1/jobs/{id}', { params: { path: { id } }, signal: options.signal }), options.signal);
  }

  /**
   * Cancels a job: a queued one at once, a running one when its worker has stopped it (watch for the
   * `cancelled` state). Idempotent, so retried like a GET; a job that is already cancelled is simply
   * returned. A job that already succeeded or failed cannot be cancelled (`OT_ERR_JOB_NOT_CANCELLABLE`).
   */
  async cancel(id: string, options: RequestOptions = {}): Promise<Job> {
    try {
      return await this.t.call(this.t.api.POST('/v1/jobs/{id}/cancel', { params: { path: { id } }, signal: options.signal, fetch: this.t.idempotentFetch }), options.signal);
    } catch (error) {
      // A retry after a lost answer finds the job already cancelled: that is the outcome asked for.
      if (isOpenTinkerError(error) && error.code === 'OT_ERR_JOB_NOT_CANCELLABLE') {
        const job = await this.get(id, options);
        if (job.state === 'cancelled') return job;
      }
      throw error;
    }
  }

  /** The job runner's output so far (stdout and stderr); `tail` keeps the last lines. */
  logs(id: string, query: { tail?: number } = {}, options: RequestOptions = {}): Promise<string> {
    return this.t.call(this.t.api.GET('/v1/jobs/{id}/logs', { params: { path: { id }, query }, parseAs: 'text', signal: options.signal }), options.signal);
  }

  /** Metric points ordered by step; filter by `name`, page with `after_step` and `limit`. */
  metrics(id: string, query: MetricsQuery = {}, options: RequestOptions = {}): Promise<MetricPoint[]> {
    return this.t.call(this.t.api.GET('/v1/jobs/{id}/metrics', { params: { path: { id }, query }, signal: options.signal }), options.signal);
  }

  /** The files the job published. */
  artifacts(id: string, options: RequestOptions = {}): Promise<Artifact[]> {
    return this.t.call(this.t.api.GET('/v1/jobs/{id}/artifacts', { params: { path: { id } }, signal: options.signal }), options.signal);
  }

  /**
   * An artifact's content as a stream (large files are not held in memory). In Node, write it to a
   * file with `pipeline(Readable.fromWeb(stream), createWriteStream(path))`.
   *
   * @example
   * ```ts
   * const stream = await client.jobs.downloadArtifact(id, 'result.json');
   * const text = await new Response(stream).text();
   * ```
   */
  async downloadArtifact(id: string, name: string, options: RequestOptions = {}): Promise<ReadableStream<Uint8Array>> {
    const stream = await this.t.call(
      this.t.api.GET('/v1/jobs/{id}/artifacts/{name}', { params: { path: { id, name } }, parseAs: 'stream', signal: options.signal }),
      options.signal,
    );
    if (!stream) throw new OpenTinkerError('OT_ERR_BAD_RESPONSE', `Artifact ${name} of job ${id} came back without a body`, 200);
    return stream as ReadableStream<Uint8Array>;
  }

  /** The job's complete checkpoints, oldest first (step, size, files, whether it has a LoRA adapter). */
  checkpoints(id: string, options: RequestOptions = {}): Promise<Checkpoint[]> {
    return this.t.call(this.t.api.GET('/v1/jobs/{id}/checkpoints', { params: { path: { id } }, signal: options.signal }), options.signal);
  }

  /**
   * A checkpoint as an uncompressed tar stream (entries under `step-<n>/`), `step` a number or
   * `'latest'`. `step` is the step that was sent, read from the `x-checkpoint-step` header.
   *
   * @example
   * ```ts
   * const { step, stream } = await client.jobs.downloadCheckpoint(id, 'latest');
   * await pipeline(Readable.fromWeb(stream), createWriteStream(`step-${step}.tar`));
   * ```
   */
  async downloadCheckpoint(id: string, step: number | 'latest' = 'latest', options: RequestOptions = {}): Promise<{ step: number; stream: ReadableStream<Uint8Array> }> {
    const { data, response } = await this.t.send(
      this.t.api.GET('/v1/jobs/{id}/checkpoints/{step}/download', { params: { path: { id, step: String(step) } }, parseAs: 'stream', signal: options.signal }),
      options.signal,
    );
    if (!data) throw new OpenTinkerError('OT_ERR_BAD_RESPONSE', `Checkpoint ${step} of job ${id} came back without a body`, 200);
    const sent = Number(response.headers.get('x-checkpoint-step'));
    return { step: Number.isInteger(sent) ? sent : Number(step), stream: data as ReadableStream<Uint8Array> };
  }

  /** An artifact's content, whole. */
  async readArtifact(id: string, name: string, options: RequestOptions = {}): Promise<Uint8Array> {
    const stream = await this.downloadArtifact(id, name, options);
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }

  /**
   * The job's events, live, as an async iterator that reconnects by itself and ends after the `end`
   * event (see {@link watchJobEvents}).
   *
   * @example
   * ```ts
   * for await (const event of client.jobs.watch(id)) {
   *   if (event.type === 'metrics') for (const p of event.data.points) console.log(p.name, p.value);
   * }
   * ```
   */
  watch(id: string, options: WatchJobOptions = {}): AsyncGenerator<JobEvent, void, undefined> {
    return watchJobEvents(this.t, id, options);
  }

  /**
   * Resolves with the job once it has ended (succeeded, failed or cancelled: check `state`). Follows
   * the event stream rather than polling. Give it `signal: AbortSignal.timeout(ms)` to bound the wait.
   */
  async wait(id: string, options: WaitForJobOptions = {}): Promise<Job> {
    for await (const event of watchJobEvents(this.t, id, options)) options.onEvent?.(event);
    return this.get(id, { signal: options.signal });
  }
}
