/**
 * verl's `trainer.logger` for a job runner: each metric point a job reports (`ctx.metrics`) also goes
 * to the backends named there, with the names and steps the API records, so TensorBoard and W&B show
 * the series the API and dashboard show.
 *
 * - `console`: verl's `LocalLogger` line per report, `step:N - name:value - …`, in the job log;
 * - `tensorboard`: an event file under `<workDir>/tensorboard/`, published as a job artifact;
 * - `wandb`: an offline run under `<workDir>/wandb/`, published as a tar artifact for `wandb sync`, and,
 *   with the submitting user's key (`trainer.wandb.api_key`), the same run streamed to W&B as it is
 *   written ({@link WandbStream}). The offline run is written first and is the record: the stream only
 *   follows it, and nothing W&B does (down, slow, refusing the key) reaches the job.
 *
 * Files are opened on the first report, when the job knows whether it resumed: a job that resumed at
 * step N keeps what its earlier attempt wrote up to N (and series the resume keeps, like `sft/`), as
 * the API does; a job that starts over starts its files over.
 */
import { createWriteStream, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, join, relative } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pack as tarPack } from 'tar-stream';
import type { RunContext } from '../runner/run-context';
import { TensorBoardWriter } from './tensorboard-writer';
import { WandbOfflineRun } from './wandb-offline-run';
import { WandbStream } from './wandb-stream';

import { WANDB_CLOUD, type MetricLoggerName } from './metric-logger-names';

export interface MetricLoggingSpec {
  logger: MetricLoggerName[];
  project_name: string;
  experiment_name?: string;
  /** Streaming to W&B: the submitting user's key, WANDB_BASE_URL and WANDB_ENTITY. */
  wandb?: { api_key?: string; base_url?: string; entity?: string };
}

/** What streaming to W&B needs from the job runner: a fetch under the job's URL policy. */
export interface MetricLoggingOptions {
  wandbFetch?: typeof fetch;
}

/** wandb-core's file-stream interval, and a few seconds for the end, when the worker sends no settings. */
const DEFAULT_WANDB_SETTINGS = { streamSeconds: 15, finishSeconds: 10 };

/** verl prints numbers with Python's `repr`; JavaScript's shortest round-trip form is the same digits. */
function pyRepr(v: number): string {
  if (Number.isInteger(v) && Math.abs(v) < 1e16) return `${v}.0`;
  return String(v).replace(/e([+-])(\d)$/, 'e$10$2');
}

export function consoleLine(step: number, values: Record<string, number>): string {
  return [`step:${step}`, ...Object.entries(values).map(([k, v]) => `${k}:${pyRepr(v)}`)].join(' - ');
}

/** Spec keys whose values are credentials: never copied into a W&B run's config. */
const SECRET_KEY = /(^|_)(token|api_?key|secret|password|authorization)$/i;

export function redactSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactSecrets);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .filter(([k]) => !SECRET_KEY.test(k))
        .map(([k, v]) => [k, redactSecrets(v)]),
    );
  }
  return value;
}

interface Resume {
  step: number;
  keepPrefixes: string[];
}

export class MetricLoggers {
  private opened = false;
  private resume: Resume | null = null;
  private tensorboard: TensorBoardWriter | null = null;
  private wandb: WandbOfflineRun | null = null;
  private stream: WandbStream | null = null;
  private readonly pendingLines: string[] = [];

  constructor(
    private readonly ctx: RunContext,
    private readonly spec: MetricLoggingSpec,
    private readonly jobType: string,
    private readonly options: MetricLoggingOptions = {},
  ) {}

  get enabled(): boolean {
    return this.spec.logger.length > 0;
  }

  private has(name: MetricLoggerName): boolean {
    return this.spec.logger.includes(name);
  }

  private open(): void {
    if (this.opened) return;
    this.opened = true;
    const resume = this.resume;
    // Drops what a lost attempt reported after the checkpoint this one resumed from; all of it when
    // this attempt starts over.
    const keep = (step: number, name: string) => resume !== null && (step <= resume.step || resume.keepPrefixes.some((p) => name.startsWith(p)));
    if (this.has('tensorboard')) {
      const dir = join(this.ctx.workDir, 'tensorboard');
      mkdirSync(dir, { recursive: true });
      this.tensorboard = TensorBoardWriter.open(dir, keep);
      this.ctx.log(`tensorboard: writing ${relative(this.ctx.workDir, this.tensorboard.path)} (artifact ${basename(this.tensorboard.path)})`);
    }
    if (this.has('wandb')) {
      const run = {
        project: this.spec.project_name,
        displayName: this.spec.experiment_name ?? (typeof this.ctx.spec.name === 'string' ? this.ctx.spec.name : this.ctx.jobId),
        jobType: this.jobType,
        tags: ['opentinker', `job:${this.ctx.jobId}`],
        config: redactSecrets(this.ctx.spec) as Record<string, unknown>,
      };
      const entity = this.spec.wandb?.entity;
      this.wandb = WandbOfflineRun.open({ dir: this.ctx.workDir, ...run, ...(entity ? { entity } : {}), keep });
      this.ctx.log(
        `wandb: offline run ${this.wandb.runId} in ${relative(this.ctx.workDir, this.wandb.runDir)} (artifact ${this.wandbArtifactName()}); ` +
          'upload it with `wandb sync <folder>`',
      );
      this.openStream(run, entity);
      for (const line of this.pendingLines.splice(0)) this.line(line);
    }
  }

  /** The stream to W&B, when the job's owner gave a key: the same run, from the rows the offline run writes. */
  private openStream(run: { project: string; displayName: string; jobType: string; tags: string[]; config: Record<string, unknown> }, entity?: string): void {
    const key = this.spec.wandb?.api_key;
    const offline = this.wandb!;
    if (!key) return;
    if (!this.options.wandbFetch) {
      this.ctx.log('wandb: this job runner cannot reach W&B (no URL policy): the run is offline only');
      return;
    }
    const settings = this.ctx.policy.wandb ?? DEFAULT_WANDB_SETTINGS;
    this.stream = new WandbStream({
      ...run,
      baseUrl: this.spec.wandb?.base_url ?? WANDB_CLOUD,
      apiKey: key,
      ...(entity ? { entity } : {}),
      runId: offline.runId,
      host: hostname(),
      resume: offline.continued,
      fetch: this.options.wandbFetch,
      log: (line) => this.ctx.log(line),
      syncHint: `the offline run has every row; download the artifact ${this.wandbArtifactName()}, extract it and run \`wandb sync <folder>\` (with --id <new id> if part of this run is on W&B already)`,
      intervalMs: settings.streamSeconds * 1000,
    });
    this.stream.defineMetrics(offline.metrics);
    // A resumed run: the rows the earlier attempt kept, for what W&B did not get then (the stream skips what it has).
    for (const row of offline.keptRows) this.stream.history(row);
  }

  private wandbArtifactName(): string {
    return `wandb-${basename(this.wandb!.runDir)}.tar`;
  }

  metrics(step: number, values: Record<string, number>): void {
    // What the API records: finite numbers only.
    const finite = Object.fromEntries(Object.entries(values).filter(([, v]) => typeof v === 'number' && Number.isFinite(v)));
    if (Object.keys(finite).length === 0) return;
    this.open();
    if (this.has('console')) {
      const line = consoleLine(step, finite);
      this.ctx.log(line);
      this.line(line);
    }
    this.tensorboard?.write(step, finite);
    const defined = this.wandb?.metrics.length;
    const row = this.wandb?.logMetrics(step, finite);
    if (this.stream && row) {
      if (this.wandb!.metrics.length !== defined) this.stream.defineMetrics(this.wandb!.metrics);
      this.stream.history(row);
      this.stream.summary(this.wandb!.summary);
    }
  }

  resumed(step: number, keepPrefixes: string[]): void {
    if (!this.opened) this.resume = { step, keepPrefixes };
  }

  line(text: string): void {
    if (!this.has('wandb')) return;
    if (this.wandb) {
      this.wandb.logLine(text);
      this.stream?.output(text);
    } else if (!this.opened) this.pendingLines.push(text);
  }

  /**
   * Closes the files and publishes them as artifacts; `exitCode` 0 marks the W&B run finished, else
   * failed. A stream to W&B gets the rest of the run last, within the finish wait: the artifacts are
   * safe by then, whatever W&B does.
   */
  async close(exitCode: number): Promise<void> {
    if (this.tensorboard) {
      this.tensorboard.close();
      this.ctx.artifact(basename(this.tensorboard.path), this.tensorboard.path);
      this.tensorboard = null;
    }
    if (this.wandb) {
      const run = this.wandb;
      this.wandb = null;
      run.close(exitCode);
      this.stream?.summary(run.summary);
      const tar = join(this.ctx.workDir, `${basename(run.runDir)}.tar`);
      await tarFolder(run.runDir, tar);
      this.ctx.artifact(`wandb-${basename(run.runDir)}.tar`, tar);
    }
    if (this.stream) {
      const stream = this.stream;
      this.stream = null;
      await stream.finish(exitCode, (this.ctx.policy.wandb ?? DEFAULT_WANDB_SETTINGS).finishSeconds * 1000);
    }
  }

  /**
   * A context whose `metrics`, `log` and `resumed` also feed these loggers. Log lines reach the W&B
   * run's console output; metric lines of `console` go to the job log only.
   */
  wrap(ctx: RunContext): RunContext {
    if (!this.enabled) return ctx;
    return {
      ...ctx,
      log: (line) => {
        ctx.log(line);
        this.line(line);
      },
      metrics: (step, values) => {
        ctx.metrics(step, values);
        this.metrics(step, values);
      },
      resumed: (step, keepPrefixes = []) => {
        ctx.resumed(step, keepPrefixes);
        this.resumed(step, keepPrefixes);
      },
    };
  }
}

/** `dir` as a tar whose one top folder is `dir`'s own name (what `wandb sync` is pointed at once extracted). */
async function tarFolder(dir: string, out: string): Promise<void> {
  const pack = tarPack();
  // tar-stream speaks streamx; Node's pipeline() takes it as an async iterable.
  const done = pipeline(Readable.from(pack as unknown as AsyncIterable<Buffer>, { objectMode: false }), createWriteStream(out));
  const top = basename(dir);
  const walk = (sub: string) => {
    for (const name of readdirSync(join(dir, sub)).sort()) {
      const rel = sub ? `${sub}/${name}` : name;
      const full = join(dir, rel);
      const st = statSync(full);
      if (st.isDirectory()) walk(rel);
      else if (st.isFile()) pack.entry({ name: `${top}/${rel}`, size: st.size, mode: 0o644, mtime: st.mtime }, readFileSync(full));
    }
  };
  walk('');
  pack.finalize();
  await done;
}
