/**
 * Streams a W&B run to a W&B server while a job runs, the way the wandb SDK's own sender (wandb-core,
 * `core/internal/runupserter`, `core/internal/filestream`, `core/internal/runbranch/resume.go`) does:
 *
 * - GraphQL, `POST <base>/graphql` with HTTP Basic `api:<key>`: `UpsertBucket` creates the run (or finds
 *   it) with its config, tags, display name, job type and host; the answer names the entity and project
 *   the run landed in and how many history lines it has. Config changes (the metric definitions under
 *   `_wandb.m`) go in later `UpsertBucket` calls. A resumed run asks `RunResumeStatus` first, as
 *   `wandb.init(resume="allow")` does: its history and console continue at the server's line counts, and
 *   rows at or below the server's last `_step` are not sent again (W&B's steps only grow).
 * - The file stream, `POST <base>/files/<entity>/<project>/<run>/file_stream`:
 *   `{"files": {"wandb-history.jsonl": {"offset": N, "content": [row, …]}, "wandb-summary.json": {"offset": 0,
 *   "content": [summary]}, "output.log": {"offset": M, "content": ["<UTC time> <line>", …]}}}`, at most once
 *   per interval (wandb-core: 15 s), `{}` as a heartbeat after 30 s without a request, and
 *   `{"complete": true, "exitcode": N}` with the last data.
 * - Retries as wandb-core's: connection errors, timeouts, 429, 5xx and other 4xx are retried with
 *   exponential backoff (2 s doubling to 60 s, up to 25 % jitter, `Retry-After` honoured); 400, 401, 403,
 *   404, 409 (but for UpsertBucket), 410, 413, 422 and 501 stop the stream, as do redirects (the key is not
 *   sent on to another address). GraphQL calls give up after 20 retries; the file stream retries until
 *   the job ends.
 *
 * Nothing here fails the job: the offline run the job writes beside the stream holds everything. What
 * waits to be sent is capped (`maxPendingBytes`; the oldest console lines go first, then rows, logged), the end of
 * the job waits a bounded time ({@link WandbStream.finish}), and a stream that stops says why in the job
 * log with how to upload the offline run. The key is sent only in the Authorization header and never
 * appears in a log line, even when a server echoes it back.
 */
import { DEFAULT_JSON_MAX_DEPTH, tooDeepAt } from '@opentinker/env-sdk';
import { arch, platform } from 'node:os';
import { WANDB_NAME } from './metric-logger-names';

/** A metric definition: `name` plotted against `stepMetric` (the run's `define_metric`). */
export interface WandbMetric {
  name: string;
  stepMetric?: string;
}

export interface WandbStreamOptions {
  /** The W&B server, e.g. `https://api.wandb.ai` (WANDB_BASE_URL). */
  baseUrl: string;
  apiKey: string;
  /** WANDB_ENTITY; absent: the key's default entity, as the server picks it. */
  entity?: string;
  project: string;
  runId: string;
  displayName: string;
  jobType: string;
  tags: string[];
  /** The run's config (top-level keys), without credentials. */
  config: Record<string, unknown>;
  host: string;
  /** The run was started by an earlier attempt of the job: continue it (`resume="allow"`). */
  resume: boolean;
  /** The only way out: a fetch under the job's URL policy. */
  fetch: typeof fetch;
  /** A line in the job log. */
  log(line: string): void;
  /** Ends the line that says the stream stopped: how to upload the offline run instead. */
  syncHint: string;
  /** The least time between two file-stream requests with data (wandb-core: 15 s). */
  intervalMs: number;
  /** A request with nothing in it after this long without one (wandb-core: 30 s). */
  heartbeatMs?: number;
  /** Most bytes of rows and console lines waiting to be sent. */
  maxPendingBytes?: number;
  /** Most bytes of rows and lines in one request (wandb-core: 10 MiB). */
  maxRequestBytes?: number;
  /** Backoff between retries: `minMs · 2^attempt` with jitter, at most `maxMs`. */
  backoff?: { minMs: number; maxMs: number };
  /** Tries of a GraphQL call (wandb-core: 1 + 20 retries). */
  graphqlAttempts?: number;
  /** Longest wait for one answer. */
  requestTimeoutMs?: number;
}

// wandb-core: api.DefaultRetryMax, DefaultRetryWaitMin/Max, DefaultNonRetryTimeout; filestream defaults.
const DEFAULTS = {
  heartbeatMs: 30_000,
  maxPendingBytes: 16 * 1024 * 1024,
  maxRequestBytes: 10 * 1024 * 1024,
  backoff: { minMs: 2_000, maxMs: 60_000 },
  graphqlAttempts: 21,
  requestTimeoutMs: 30_000,
};
/** Most bytes of an answer read; W&B's answers are small. */
const MAX_ANSWER_BYTES = 1024 * 1024;

const HISTORY = 'wandb-history.jsonl';
const SUMMARY = 'wandb-summary.json';
const OUTPUT = 'output.log';

// The queries as wandb-core sends them (core/api/graphql/mutation_run.graphql, query_run_resume_status.graphql).
const UPSERT_BUCKET = `mutation UpsertBucket($id: String, $name: String, $project: String, $entity: String, $groupName: String, $description: String, $displayName: String, $notes: String, $commit: String, $config: JSONString, $host: String, $debug: Boolean, $program: String, $repo: String, $jobType: String, $state: String, $sweep: String, $tags: [String!], $summaryMetrics: JSONString) {
  upsertBucket(input: {id: $id, name: $name, groupName: $groupName, modelName: $project, entityName: $entity, description: $description, displayName: $displayName, notes: $notes, config: $config, commit: $commit, host: $host, debug: $debug, jobProgram: $program, jobRepo: $repo, jobType: $jobType, state: $state, sweep: $sweep, tags: $tags, summaryMetrics: $summaryMetrics}) {
    bucket { id name displayName description config sweepName project { id name entity { id name } } historyLineCount }
    inserted
  }
}`;
const RUN_RESUME_STATUS = `query RunResumeStatus($project: String, $entity: String, $name: String!) {
  model(name: $project, entityName: $entity) {
    id name entity { id name }
    bucket(name: $name, missingOk: true) {
      id name summaryMetrics displayName logLineCount historyLineCount eventsLineCount historyTail eventsTail config tags notes wandbConfig(keys: ["t"])
    }
  }
}`;

/** wandb-core's RetryMostFailures: these answers are final; other 4xx and 5xx are retried. */
const FINAL_STATUS = new Set([400, 401, 403, 404, 409, 410, 413, 422, 501]);
const retryMostFailures = (status: number) => !FINAL_STATUS.has(status);
/** UpsertBucketRetryPolicy: 409 (the run is being created by another call) is retried too. */
const retryUpsert = (status: number) => status === 409 || retryMostFailures(status);

/** Ends the stream: `reason` says why, for the job log. */
class StreamStopped extends Error {}

interface FileChunk {
  offset: number;
  content: string[];
}

interface FileStreamBody {
  files?: Record<string, FileChunk>;
  complete?: boolean;
  exitcode?: number;
}

/** What happened to rows and lines that did not reach W&B, for the log. */
interface Tally {
  rows: number;
  firstStep: number;
  lastStep: number;
  lines: number;
}

const emptyTally = (): Tally => ({ rows: 0, firstStep: Infinity, lastStep: -Infinity, lines: 0 });

function describeTally(t: Tally): string {
  const parts: string[] = [];
  if (t.rows > 0) parts.push(`${t.rows} history row${t.rows === 1 ? '' : 's'} (_step ${t.firstStep === t.lastStep ? t.firstStep : `${t.firstStep}–${t.lastStep}`})`);
  if (t.lines > 0) parts.push(`${t.lines} console line${t.lines === 1 ? '' : 's'}`);
  return parts.join(' and ');
}

/** W&B's console-line time: UTC with microseconds and no zone (core/internal/runconsolelogs). */
function consoleTime(ms: number): string {
  return new Date(ms).toISOString().replace('Z', '000');
}

/** The run config as UpsertBucket takes it: `{"key": {"value": …}}`, W&B's own data under `_wandb`. */
function wandbConfigJson(config: Record<string, unknown>, metrics: readonly WandbMetric[]): string {
  const out: Record<string, { value: unknown }> = {};
  for (const [key, value] of Object.entries(config)) out[key] = { value };
  out._wandb = { value: { t: { '13': `${platform()}-${arch() === 'x64' ? 'x86_64' : arch()}` }, m: encodeMetrics(metrics) } };
  return JSON.stringify(out);
}

/**
 * Metric definitions as wandb-core writes them into `_wandb.m` (corelib.ProtoEncodeToDict of each
 * MetricRecord): `"1"` the name, `"5"` the 1-based index of its step metric in the list, `"6"` the
 * options set (3: defined), `"7"` summary modes.
 */
function encodeMetrics(metrics: readonly WandbMetric[]): Array<Record<string, unknown>> {
  const list: WandbMetric[] = [];
  const index = new Map<string, number>();
  const add = (m: WandbMetric) => {
    if (index.has(m.name)) return;
    if (m.stepMetric !== undefined && !index.has(m.stepMetric)) add({ name: m.stepMetric });
    index.set(m.name, list.length);
    list.push(m);
  };
  for (const m of metrics) add(m);
  return list.map((m) => ({ '1': m.name, ...(m.stepMetric !== undefined ? { '5': index.get(m.stepMetric)! + 1 } : {}), '6': [3], '7': [] }));
}

/** A GraphQL or file-stream answer's JSON, read up to a cap (a hostile server cannot fill memory). */
async function readAnswer(res: Response): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Buffer[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_ANSWER_BYTES) {
      await reader.cancel().catch(() => undefined);
      throw new StreamStopped(`W&B's answer is larger than ${MAX_ANSWER_BYTES} bytes`);
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks).toString('utf8');
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const count = (v: unknown): number => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : 0);

/** The last `_step` of a run from RunResumeStatus (its history tail, else its summary), or null. */
function lastStepOf(bucket: Record<string, unknown>): number | null {
  const parse = (text: unknown): unknown => {
    try {
      return typeof text === 'string' ? JSON.parse(text) : null;
    } catch {
      return null;
    }
  };
  const tail = parse(bucket.historyTail);
  const lastLine = Array.isArray(tail) && tail.length > 0 ? parse(tail[tail.length - 1]) : null;
  const summary = parse(bucket.summaryMetrics);
  for (const source of [lastLine, summary]) {
    if (isRecord(source) && typeof source._step === 'number' && Number.isSafeInteger(source._step)) return source._step;
  }
  return null;
}

/** Whether RunResumeStatus found a run that has started (wandb-core's runExists: `_wandb.t` in its config). */
function runStarted(bucket: Record<string, unknown>): boolean {
  try {
    return typeof bucket.wandbConfig === 'string' && isRecord(JSON.parse(bucket.wandbConfig)) && 't' in JSON.parse(bucket.wandbConfig);
  } catch {
    return false;
  }
}

export class WandbStream {
  private readonly o: Required<Omit<WandbStreamOptions, 'entity'>> & { entity?: string };
  private readonly base: string;
  private readonly auth: string;
  private readonly abort = new AbortController();
  private entity: string | null;
  private project: string;
  private historyOffset = 0;
  private outputOffset = 0;
  /** Rows below this `_step` are on the server already (a resumed run). */
  private minStep = -Infinity;
  private readonly pendingRows: Array<{ step: number; line: string }> = [];
  private readonly pendingLines: string[] = [];
  private pendingBytes = 0;
  private summaryLine: string | null = null;
  private metrics: WandbMetric[] = [];
  private configDirty = false;
  private finishing: { exitCode: number } | null = null;
  private stopped = false;
  private retrying = false;
  /** Why the last try failed, while retrying. */
  private lastProblem: string | null = null;
  /** Ends the idle wait between requests (new data, finish); never a retry's backoff. */
  private wake: (() => void) | null = null;
  private readonly dropped = emptyTally();
  private readonly skipped = emptyTally();
  /** The steps and console lines of the request being sent, lost to W&B if the stream stops now. */
  private inFlight: { steps: number[]; lines: number } = { steps: [], lines: 0 };
  private readonly loop: Promise<void>;

  constructor(options: WandbStreamOptions) {
    this.o = { ...DEFAULTS, ...options };
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.auth = `Basic ${Buffer.from(`api:${options.apiKey}`).toString('base64')}`;
    this.entity = options.entity ?? null;
    this.project = options.project;
    // Started after the caller's first calls (metric definitions, rows), so the run is created with them.
    this.loop = Promise.resolve().then(() => this.run());
  }

  /** One history row: the metrics of a step with `_step`, `_runtime` and `_timestamp`. */
  history(row: Record<string, unknown>): void {
    if (this.stopped || this.finishing) return;
    const line = JSON.stringify(row);
    this.pendingRows.push({ step: Number(row._step), line });
    this.pendingBytes += line.length;
    this.trim();
    this.wake?.();
  }

  /** The run's whole summary (it replaces the one sent before). */
  summary(summary: Record<string, unknown>): void {
    if (this.stopped) return;
    this.summaryLine = JSON.stringify(summary);
    this.wake?.();
  }

  /** Console output: each line of `text` becomes a line of the run's output.log. */
  output(text: string): void {
    if (this.stopped || this.finishing) return;
    const time = consoleTime(Date.now());
    const lines = text.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    for (const line of lines) {
      const stamped = `${time} ${line.replace(/\r/g, '')}`;
      this.pendingLines.push(stamped);
      this.pendingBytes += stamped.length;
    }
    this.trim();
    this.wake?.();
  }

  /** The run's metric definitions, all of them (sent in the config with the next request). */
  defineMetrics(metrics: readonly WandbMetric[]): void {
    if (this.stopped) return;
    this.metrics = [...metrics];
    this.configDirty = true;
    this.wake?.();
  }

  /**
   * Sends what is left and marks the run finished with `exitCode` (0: finished, else failed), waiting at
   * most `timeoutMs`; then the stream is given up and the log says what did not reach W&B.
   */
  async finish(exitCode: number, timeoutMs: number): Promise<void> {
    if (!this.finishing) this.finishing = { exitCode };
    this.wake?.();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), timeoutMs)));
    const outcome = await Promise.race([this.loop.then(() => 'done' as const), late]);
    clearTimeout(timer);
    if (outcome === 'late') {
      const last = this.lastProblem ? `; the last try: W&B ${this.lastProblem}` : '';
      this.abort.abort(new StreamStopped(`W&B did not take the end of the run within ${timeoutMs / 1000} s (setting wandb_finish_seconds)${last}`));
      await this.loop;
    }
  }

  /** Drops the oldest lines, then rows, while more than the cap waits to be sent. */
  private trim(): void {
    if (this.pendingBytes <= this.o.maxPendingBytes) return;
    const before = this.dropped.rows + this.dropped.lines;
    // Console lines go before rows (a chart with holes is worse than a log with holes); both are in the offline run.
    while (this.pendingBytes > this.o.maxPendingBytes && this.pendingLines.length > 0) {
      this.pendingBytes -= this.pendingLines.shift()!.length;
      this.dropped.lines++;
    }
    while (this.pendingBytes > this.o.maxPendingBytes && this.pendingRows.length > 0) {
      const row = this.pendingRows.shift()!;
      this.pendingBytes -= row.line.length;
      this.count(this.dropped, row.step);
    }
    if (before === 0) {
      this.o.log(
        `wandb: W&B is not keeping up: more than ${Math.round(this.o.maxPendingBytes / 1024)} KiB wait to be sent, so the oldest console lines, then rows, are dropped ` +
          'from streaming (the offline run keeps them)',
      );
    }
  }

  private count(t: Tally, step: number): void {
    t.rows++;
    t.firstStep = Math.min(t.firstStep, step);
    t.lastStep = Math.max(t.lastStep, step);
  }

  private async run(): Promise<void> {
    try {
      await this.init();
      this.o.log(`wandb: streaming run ${this.o.runId} to ${this.base} (${this.entity}/${this.project})`);
      // Data goes at most once per interval (the first at once); a heartbeat after a quiet heartbeat period.
      let lastData = -Infinity;
      let lastAny = Date.now();
      for (;;) {
        let heartbeat = false;
        if (!this.finishing) {
          const now = Date.now();
          const hasData = this.pendingRows.length > 0 || this.pendingLines.length > 0 || this.summaryLine !== null || this.configDirty;
          const dataAt = hasData ? lastData + this.o.intervalMs : Infinity;
          const at = Math.min(dataAt, lastAny + this.o.heartbeatMs);
          if (at > now) {
            await this.sleep(at - now, true);
            continue;
          }
          // A heartbeat carries nothing: data waits for its interval, as wandb-core's rate limit holds it.
          heartbeat = dataAt > now;
        }
        if (this.configDirty && !heartbeat) await this.upsertConfig();
        const body = heartbeat ? {} : this.nextRequest();
        lastAny = Date.now();
        if (body.files) lastData = lastAny;
        this.inFlight = { steps: (body.files?.[HISTORY]?.content ?? []).map((line) => Number(JSON.parse(line)._step)), lines: body.files?.[OUTPUT]?.content.length ?? 0 };
        await this.call(
          'file stream',
          `${this.base}/files/${[this.entity!, this.project, this.o.runId].map(encodeURIComponent).join('/')}/file_stream`,
          body,
          retryMostFailures,
          Infinity,
        );
        this.inFlight = { steps: [], lines: 0 };
        if (body.complete) break;
      }
      const left = describeTally(this.dropped);
      if (left) this.o.log(`wandb: ${left} were dropped from streaming while W&B was behind; the offline run has them`);
      this.o.log(`wandb: run ${this.o.runId} streamed and marked ${this.finishing!.exitCode === 0 ? 'finished' : 'failed'} on W&B`);
    } catch (error) {
      this.stop(error instanceof StreamStopped ? error.message : `unexpected error: ${this.scrub(error instanceof Error ? error.message : String(error))}`);
    }
  }

  private stop(reason: string): void {
    this.stopped = true;
    // What never reached W&B: the request being sent, waiting rows and lines (and those dropped while it was behind).
    for (const step of this.inFlight.steps) this.count(this.dropped, step);
    this.dropped.lines += this.inFlight.lines;
    for (const row of this.pendingRows.splice(0)) this.count(this.dropped, row.step);
    this.dropped.lines += this.pendingLines.splice(0).length;
    this.pendingBytes = 0;
    const left = describeTally(this.dropped);
    this.o.log(`wandb: streaming to W&B stopped: ${reason}.${left ? ` Not streamed: ${left}.` : ''} Nothing is lost: ${this.o.syncHint}`);
  }

  /**
   * Sleeps `ms`. The idle wait (`idle`) also ends on new data or finish; a retry's backoff does not. The
   * end of the finish wait ends either, with its error.
   */
  private async sleep(ms: number, idle: boolean): Promise<void> {
    await new Promise<void>((resolve) => {
      const signal = this.abort.signal;
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      // Never what keeps a process alive: finish() holds the job's end while the stream finishes.
      const timer = setTimeout(done, ms).unref();
      if (idle) this.wake = done;
      signal.addEventListener('abort', done);
    });
    this.wake = null;
    this.checkAborted();
  }

  private checkAborted(): void {
    if (this.abort.signal.aborted) throw this.abort.signal.reason instanceof StreamStopped ? this.abort.signal.reason : new StreamStopped('stopped');
  }

  private async init(): Promise<void> {
    if (this.o.resume) {
      const status = await this.graphql('RunResumeStatus', RUN_RESUME_STATUS, { project: this.project, entity: this.entity, name: this.o.runId }, retryMostFailures);
      const bucket = isRecord(status.model) && isRecord(status.model.bucket) ? status.model.bucket : null;
      if (bucket && runStarted(bucket)) {
        this.historyOffset = count(bucket.historyLineCount);
        this.outputOffset = count(bucket.logLineCount);
        const last = lastStepOf(bucket);
        if (last !== null && this.historyOffset > 0) this.minStep = last + 1;
        this.o.log(`wandb: resuming W&B run ${this.o.runId} at history line ${this.historyOffset}${last !== null ? ` (its last _step is ${last})` : ''}`);
      }
    }
    this.configDirty = false;
    const answer = await this.graphql('UpsertBucket', UPSERT_BUCKET, this.upsertVariables(true), retryUpsert);
    const bucket = isRecord(answer.upsertBucket) && isRecord(answer.upsertBucket.bucket) ? answer.upsertBucket.bucket : null;
    const project = isRecord(bucket?.project) ? bucket.project : null;
    const entity = isRecord(project?.entity) ? project.entity : null;
    // Names from the server go into request paths and the job log: W&B's name characters only.
    const name = (v: unknown) => typeof v === 'string' && WANDB_NAME.test(v);
    if (!name(project?.name) || !name(entity?.name)) throw new StreamStopped("W&B's UpsertBucket answer names no project and entity W&B would accept");
    this.project = project!.name as string;
    this.entity = entity!.name as string;
    const lines = count(bucket!.historyLineCount);
    if (lines > 0) this.historyOffset = lines;
  }

  private upsertVariables(first: boolean): Record<string, unknown> {
    const config = wandbConfigJson(this.o.config, this.metrics);
    // Later calls carry the config only, as wandb-core's: nulls leave the run's other fields as they are.
    const nulls = { id: null, groupName: null, description: null, notes: null, commit: null, debug: null, repo: null, state: null, sweep: null, summaryMetrics: null };
    if (!first)
      return { ...nulls, name: this.o.runId, project: this.project, entity: this.entity, displayName: null, config, host: null, program: null, jobType: null, tags: null };
    return {
      ...nulls,
      name: this.o.runId,
      project: this.project,
      entity: this.entity,
      displayName: this.o.displayName,
      config,
      host: this.o.host,
      program: 'opentinker',
      jobType: this.o.jobType,
      tags: this.o.tags,
    };
  }

  private async upsertConfig(): Promise<void> {
    this.configDirty = false;
    try {
      await this.graphql('UpsertBucket', UPSERT_BUCKET, this.upsertVariables(false), retryUpsert);
    } catch (error) {
      // wandb-core logs a failed config update and streams on; only the end of the finish wait stops here.
      this.checkAborted();
      this.o.log(`wandb: the run's metric definitions did not reach W&B (${(error as Error).message}); charts may plot against _step`);
    }
  }

  /** The next file-stream request: rows, summary and lines up to the size cap; `complete` once all is in. */
  private nextRequest(): FileStreamBody {
    const files: Record<string, FileChunk> = {};
    let size = 0;
    const fits = (n: number) => size === 0 || size + n <= this.o.maxRequestBytes;
    const history: string[] = [];
    while (this.pendingRows.length > 0 && fits(this.pendingRows[0].line.length)) {
      const row = this.pendingRows.shift()!;
      this.pendingBytes -= row.line.length;
      if (row.step < this.minStep) {
        this.countSkipped(row.step);
        continue;
      }
      history.push(row.line);
      size += row.line.length;
    }
    if (history.length > 0) {
      files[HISTORY] = { offset: this.historyOffset, content: history };
      this.historyOffset += history.length;
    }
    if (this.summaryLine !== null && fits(this.summaryLine.length)) {
      files[SUMMARY] = { offset: 0, content: [this.summaryLine] };
      size += this.summaryLine.length;
      this.summaryLine = null;
    }
    const output: string[] = [];
    while (this.pendingLines.length > 0 && fits(this.pendingLines[0].length)) {
      const line = this.pendingLines.shift()!;
      this.pendingBytes -= line.length;
      output.push(line);
      size += line.length;
    }
    if (output.length > 0) {
      files[OUTPUT] = { offset: this.outputOffset, content: output };
      this.outputOffset += output.length;
    }
    const body: FileStreamBody = Object.keys(files).length > 0 ? { files } : {};
    const more = this.pendingRows.length > 0 || this.pendingLines.length > 0 || this.summaryLine !== null;
    if (this.finishing && !more) {
      body.complete = true;
      body.exitcode = this.finishing.exitCode;
    }
    return body;
  }

  private countSkipped(step: number): void {
    if (this.skipped.rows === 0) {
      this.o.log(`wandb: W&B run ${this.o.runId} already has steps up to ${this.minStep - 1}; this attempt's rows up to there stay in the offline run only`);
    }
    this.count(this.skipped, step);
  }

  private async graphql(operation: string, query: string, variables: Record<string, unknown>, retry: (status: number) => boolean): Promise<Record<string, unknown>> {
    const answer = await this.call(operation, `${this.base}/graphql`, { query, variables, operationName: operation }, retry, this.o.graphqlAttempts);
    if (isRecord(answer) && Array.isArray(answer.errors) && answer.errors.length > 0) {
      const first = answer.errors[0] as { message?: unknown };
      throw new StreamStopped(`W&B refused ${operation}: ${this.scrub(typeof first?.message === 'string' ? first.message : JSON.stringify(first))}`);
    }
    if (!isRecord(answer) || !isRecord(answer.data)) throw new StreamStopped(`W&B's ${operation} answer has no data`);
    return answer.data;
  }

  /** POSTs `body` as JSON, retrying as wandb-core does; the parsed answer (null when it is not JSON). */
  private async call(what: string, url: string, body: unknown, retry: (status: number) => boolean, attempts: number): Promise<unknown> {
    const payload = JSON.stringify(body);
    for (let attempt = 0; ; attempt++) {
      this.checkAborted();
      let problem: string;
      let retryAfterMs: number | null = null;
      try {
        const res = await this.o.fetch(url, {
          method: 'POST',
          headers: { authorization: this.auth, 'content-type': 'application/json', 'user-agent': 'opentinker' },
          body: payload,
          redirect: 'manual',
          signal: AbortSignal.any([this.abort.signal, AbortSignal.timeout(this.o.requestTimeoutMs)]),
        });
        const text = await readAnswer(res);
        if (res.status >= 200 && res.status < 300) {
          if (this.retrying) this.o.log(`wandb: W&B answers again (${what})`);
          this.retrying = false;
          this.lastProblem = null;
          let answer: unknown;
          try {
            answer = JSON.parse(text);
          } catch {
            return null;
          }
          // Whatever reads the answer next (JSON.stringify of an error included) recurses once per level.
          if (tooDeepAt(answer, DEFAULT_JSON_MAX_DEPTH)) throw new StreamStopped(`${what}: W&B's answer nests deeper than ${DEFAULT_JSON_MAX_DEPTH} levels`);
          return answer;
        }
        if (res.status >= 300 && res.status < 400)
          throw new StreamStopped(`${what}: W&B redirected to another address (HTTP ${res.status}); set trainer.wandb.base_url to the address it names`);
        problem = `answered HTTP ${res.status}`;
        if (res.status === 401 || res.status === 403) {
          throw new StreamStopped(`${what}: W&B refused the API key (HTTP ${res.status}); check WANDB_API_KEY${this.entity ? ` and entity ${this.entity}` : ''}`);
        }
        if (!retry(res.status)) throw new StreamStopped(`${what}: W&B ${problem}${this.detail(text)}`);
        const after = res.headers.get('retry-after');
        if (after !== null && /^\d+(\.\d+)?$/.test(after.trim())) retryAfterMs = Math.min(Number(after) * 1000, this.o.backoff.maxMs);
      } catch (error) {
        if (error instanceof StreamStopped) throw error;
        this.checkAborted();
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        if (cause?.code === 'URL_NOT_ALLOWED') throw new StreamStopped(this.scrub(cause.message ?? 'the W&B address is not allowed'));
        problem =
          (error as Error).name === 'TimeoutError'
            ? `did not answer within ${this.o.requestTimeoutMs / 1000} s`
            : `is unreachable (${cause?.code ?? this.scrub((error as Error).message)})`;
      }
      if (attempt + 1 >= attempts) throw new StreamStopped(`${what}: W&B ${problem} (${attempts} tries)`);
      const backoff = Math.min(this.o.backoff.maxMs, this.o.backoff.minMs * 2 ** Math.min(attempt, 32) * (1 + 0.25 * Math.random()));
      const delay = retryAfterMs ?? backoff;
      if (!this.retrying) this.o.log(`wandb: ${what}: W&B at ${this.base} ${problem}; retrying (next try in ${(delay / 1000).toFixed(1)} s)`);
      this.retrying = true;
      this.lastProblem = problem;
      await this.sleep(delay, false);
    }
  }

  /** A short, clean excerpt of an error answer. */
  private detail(text: string): string {
    const trimmed = this.scrub(text).slice(0, 200);
    return trimmed ? `: ${trimmed}` : '';
  }

  /** Text from a server or an error, without the key (in any form it was sent) or control characters. */
  private scrub(text: string): string {
    let out = text;
    for (const secret of [this.o.apiKey, this.auth.slice('Basic '.length)]) out = out.split(secret).join('***');
    return out.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  }
}
