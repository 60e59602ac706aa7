import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { statSync } from 'node:fs';
import { AppConfig } from '../config/app-config';
import { LocalBus } from '../core/local-bus';
import { HubAccessService } from '../hub/hub-access.service';
import { hubSettings } from '../hub/hub-settings';
import type { JobHubAccess } from '../hub/job-hub';
import { findJobKind } from '../kinds/job-kinds';
import { JobEventsRepository, type JobOutput, type JobOutputEvent, type MetricPoint } from '../jobs/job-events.repository';
import type { JobEntity } from '../jobs/job.entity';
import { JobsRepository } from '../jobs/jobs.repository';
import { parseIpcMessage } from '../core/ipc-message';
import { RunnerMessage } from '../runner/runner-protocol';
import { urlPolicyFor } from '../egress/egress-policy';
import type { AttachedJobHook, JobFailure, JobHook } from './job-hooks';
import { JOB_LAUNCHER, startJobProcess, type JobLauncher, type RunnerProcess } from './job-process';
import { JOB_QUEUE } from './job-queue';
import type { JobQueue } from './job-queue';

const LOG_FLUSH_MS = 300;
/** Events per batched write of a job's output (a `metrics` event of a train step carries about 25 points). */
const MAX_BATCH_EVENTS = 64;
/** Log text kept in the database per job; the file on the worker keeps everything. */
const DB_LOG_LIMIT = 8 * 1024 * 1024;

export type StopReason = 'cancel' | 'shutdown' | 'lost';

interface Running {
  job: JobEntity;
  workerId: string;
  process: RunnerProcess;
  onEnded: () => void;
  /** The hooks of its kind's capabilities (the call relay of a kind with `calls`). */
  hooks: AttachedJobHook[];
  /** Serialises this job's database writes so they land in the order the runner sent them. */
  writes: Promise<void>;
  /**
   * Progress, metrics and log text not yet written: they queue here and go to the database together,
   * in one transaction, when the writes before them are done (null: none waiting).
   */
  output: JobOutput | null;
  log: { buffer: string; stored: number; truncated: boolean; timer?: NodeJS.Timeout };
  stopReason?: StopReason;
  /** What the runner said when it failed (redacted), and whose fault it was. */
  failure?: JobFailure;
}

/**
 * Runs claimed jobs: one job runner child process each, whose messages, output and exit it records
 * (progress, metrics, resume state, artifacts, logs, final state).
 */
@Injectable()
export class JobSupervisor {
  private readonly logger = new Logger('JobSupervisor');
  private readonly running = new Map<string, Running>();
  private readonly hooks: JobHook[] = [];

  constructor(
    private readonly config: AppConfig,
    private readonly jobs: JobsRepository,
    private readonly events: JobEventsRepository,
    @Inject(JOB_QUEUE) private readonly queue: JobQueue,
    private readonly bus: LocalBus,
    private readonly hubAccess: HubAccessService,
    @Optional() @Inject(JOB_LAUNCHER) private readonly launch: JobLauncher = startJobProcess,
  ) {}

  /** Text for the tenant (job logs and errors): the server's folders named, not spelled out. */
  private redact(text: string): string {
    return this.config.hostPaths.redact(text);
  }

  /** Adds work for the running jobs of the kinds the hook applies to (registered by the capability's module). */
  addHook(hook: JobHook): void {
    this.hooks.push(hook);
  }

  get runningIds(): string[] {
    return [...this.running.keys()];
  }

  /** Starts a claimed job; `onEnded` runs once its end is recorded and its devices may be reused. */
  start(job: JobEntity, workerId: string, launch: { ownerIsAdmin: boolean; secrets: Record<string, string>; hub: JobHubAccess }, onEnded: () => void): void {
    const entry = { job, workerId, onEnded, hooks: [] as AttachedJobHook[], writes: Promise.resolve(), output: null, log: { buffer: '', stored: 0, truncated: false } } as Running;
    entry.process = this.launch(job, {
      runnerEntry: this.config.install.runnerEntry,
      jobDir: this.config.jobDir(job.id),
      paths: { home: this.config.home, hostRoot: this.config.install.root, pluginsDir: this.config.pluginsDir },
      engine: this.config.engine,
      stackTraces: this.config.values.runner_stacks,
      policy: {
        environmentHost: this.config.environmentHost,
        modelRoots: this.config.values.model_roots,
        remoteEnvironments: urlPolicyFor(this.config, launch.ownerIsAdmin),
        hub: hubSettings(this.config.values),
        hubAccess: launch.hub,
        wandb: { streamSeconds: this.config.values.wandb_stream_seconds, finishSeconds: this.config.values.wandb_finish_seconds },
      },
      secrets: launch.secrets,
      graceMs: this.config.values.cancel_grace_seconds * 1000,
      onMessage: (m) => this.onMessage(entry, m),
      onLog: (text) => this.onLog(entry, text),
    });
    this.running.set(job.id, entry);
    const kind = findJobKind(job.kind);
    if (kind) entry.hooks = this.hooks.filter((h) => h.appliesTo(kind)).map((h) => h.attach(job, (m) => entry.process.send(m)));
    this.logger.log(`Started job ${job.id} (${job.kind}) on ${job.devices?.join(', ') || 'no devices'}, pid ${entry.process.pid}`);
    void entry.process.exited.then((exit) => this.onExit(entry, exit.code, exit.signal, exit.stderrTail));
  }

  stop(id: string, reason: StopReason): void {
    const entry = this.running.get(id);
    if (!entry || entry.stopReason) return;
    entry.stopReason = reason;
    this.logger.log(`Stopping job ${id} (${reason})`);
    entry.process.stop();
  }

  /** Stops every job for a shutdown and waits until each one's end is recorded. */
  async stopAll(): Promise<void> {
    for (const id of this.running.keys()) this.stop(id, 'shutdown');
    while (this.running.size > 0) await new Promise((r) => setTimeout(r, 20));
  }

  private write(entry: Running, work: () => Promise<unknown>): void {
    // Output that arrives after this write must land after it: it starts a new batch.
    entry.output = null;
    this.chain(entry, work);
  }

  /**
   * Queues a progress, metrics or log event for the job's next batched write. A runner reports a step
   * as a few messages and log lines that arrive together; writing them in one transaction (with one
   * wake-up of the event streams) rather than one each keeps the server's work per step small, and that
   * work competes with the job runner for the same CPUs.
   */
  private record(entry: Running, event: JobOutputEvent): void {
    let output = entry.output;
    if (!output) {
      const batch: JobOutput = { progress: null, events: [] };
      output = entry.output = batch;
      this.chain(entry, () => {
        // Taken as it starts: what arrives while it is written goes into the next batch.
        if (entry.output === batch) entry.output = null;
        return this.events.appendOutput(entry.job.id, batch);
      });
    }
    output.events.push(event);
    // The row keeps the latest progress; every progress event stays in the stream.
    if (event.type === 'progress') output.progress = event.data;
    // While the database lags, batches would grow without bound; a statement has a bound-parameter
    // limit (SQLite 32,766, PostgreSQL 65,535), so a full batch is closed and the next one starts.
    if (output.events.length >= MAX_BATCH_EVENTS) entry.output = null;
  }

  private chain(entry: Running, work: () => Promise<unknown>): void {
    entry.writes = entry.writes
      .then(work)
      .then(() => this.bus.jobEvents(entry.job.id))
      .catch((error: Error) => this.logger.warn(`Job ${entry.job.id}: could not record runner output: ${error.message}`));
  }

  private onMessage(entry: Running, raw: unknown): void {
    const id = entry.job.id;
    let m: RunnerMessage;
    try {
      m = parseIpcMessage(RunnerMessage, raw, 'The job runner');
    } catch (error) {
      // The runner runs plugin code: what it sends is input. A message that does not fit is dropped,
      // and the job's log says so.
      this.logger.warn(`Job ${id}: ${(error as Error).message}`);
      this.onLog(entry, `[worker] dropped a message: ${(error as Error).message}\n`);
      return;
    }
    switch (m.type) {
      case 'running':
        return this.write(entry, () => this.jobs.markRunning(id, entry.workerId));
      case 'progress':
        return this.record(entry, { type: 'progress', data: { step: m.step, total: m.total, message: m.message } });
      case 'metrics': {
        const points: MetricPoint[] = Object.entries(m.values)
          .filter((e): e is [string, number] => typeof e[1] === 'number' && Number.isFinite(e[1]))
          .map(([name, value]) => ({ step: m.step, name: name.slice(0, 128), value }));
        if (points.length > 0) this.record(entry, { type: 'metrics', data: { points } });
        return;
      }
      case 'checkpoint':
        return this.write(entry, () => this.jobs.saveResumeState(id, entry.workerId, m.state));
      case 'resumed':
        return this.write(entry, () => this.events.rewindMetrics(id, m.step, m.keepPrefixes));
      case 'artifact':
        return this.write(entry, async () => {
          const size = statSync(m.path).size;
          await this.events.putArtifact({ jobId: id, name: m.name, path: m.path, size, workerId: entry.workerId, createdAt: Date.now() });
          await this.events.append(id, 'artifact', { name: m.name, size });
        });
      case 'hub':
        return this.write(entry, () => this.hubAccess.record(entry.job.ownerId, m.use));
      case 'failed':
        entry.failure = { error: this.redact(m.message), category: m.category ?? 'server' };
        return;
      case 'call-result':
        return this.write(entry, () => Promise.all(entry.hooks.map((h) => h.onMessage(m))));
      case 'done':
        return;
    }
  }

  private onLog(entry: Running, text: string): void {
    const log = entry.log;
    if (log.truncated) return;
    log.buffer += this.redact(text);
    log.timer ??= setTimeout(() => this.flushLog(entry), LOG_FLUSH_MS);
  }

  private flushLog(entry: Running): void {
    const log = entry.log;
    clearTimeout(log.timer);
    log.timer = undefined;
    if (log.buffer === '') return;
    let text = log.buffer;
    log.buffer = '';
    if (log.stored + text.length > DB_LOG_LIMIT) {
      text =
        text.slice(0, Math.max(0, DB_LOG_LIMIT - log.stored)) +
        `\n[log truncated here: the full log is ${this.redact(this.config.jobDir(entry.job.id))}/job.log on worker ${entry.workerId}]\n`;
      log.truncated = true;
    }
    log.stored += text.length;
    this.record(entry, { type: 'log', data: { text } });
  }

  private async onExit(entry: Running, code: number | null, signal: NodeJS.Signals | null, stderrTail: string[]): Promise<void> {
    const { job } = entry;
    this.flushLog(entry);
    await entry.writes;
    try {
      const failure = this.failureOf(entry, code, signal, stderrTail);
      for (const hook of entry.hooks) await hook.detach(failure);
      await this.recordExit(entry, code, signal, stderrTail);
    } catch (error) {
      this.logger.error(`Job ${job.id}: could not record its end: ${(error as Error).message}`);
    }
    this.running.delete(job.id);
    this.bus.jobEvents(job.id);
    entry.onEnded();
  }

  /**
   * The job's error when its runner ended on its own without success: what it said, else how it exited
   * with the end of its stderr (a crash). Undefined when it succeeded or the worker stopped it.
   */
  private failureOf(entry: Running, code: number | null, signal: NodeJS.Signals | null, stderrTail: string[]): JobFailure | undefined {
    if (entry.stopReason !== undefined || code === 0) return undefined;
    if (entry.failure) return entry.failure;
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    return { error: `The job runner ${how}${stderrTail.length ? `: ${this.redact(stderrTail.slice(-3).join(' | '))}` : ''}`, category: 'server' };
  }

  private async recordExit(entry: Running, code: number | null, signal: NodeJS.Signals | null, stderrTail: string[]): Promise<void> {
    const { job, workerId } = entry;
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    this.logger.log(`Job ${job.id} runner ${how}${entry.stopReason ? ` (${entry.stopReason})` : ''}`);
    switch (entry.stopReason) {
      case 'lost':
        return;
      case 'cancel':
        await this.jobs.finish(job.id, workerId, 'cancelled', { exitCode: code });
        return;
      case 'shutdown': {
        const kind = findJobKind(job.kind);
        const fresh = (await this.jobs.findById(job.id)) ?? job;
        if (kind?.resumable && !fresh.cancelRequestedAt) {
          if (await this.jobs.requeue(fresh, `worker ${workerId} shut down; the job will resume`, { countAttempt: false })) {
            await this.queue.enqueue(fresh);
          }
        } else {
          await this.jobs.finish(job.id, workerId, fresh.cancelRequestedAt ? 'cancelled' : 'failed', {
            error: `Worker ${workerId} shut down while the job was running`,
            exitCode: code,
          });
        }
        return;
      }
      case undefined:
        // Not stopped by the worker: the exit code says how the job ended.
        break;
    }
    if (code === 0) {
      await this.jobs.finish(job.id, workerId, 'succeeded', { exitCode: 0 });
      return;
    }
    // A runner killed from outside (the OOM killer, an operator) is lost work like a lost worker: a
    // resumable job continues from its checkpoint while it has attempts left.
    if (signal !== null && !entry.failure) {
      const kind = findJobKind(job.kind);
      const fresh = (await this.jobs.findById(job.id)) ?? job;
      if (kind?.resumable && !fresh.cancelRequestedAt && fresh.attempts < fresh.maxAttempts) {
        const reason = `The job runner ${how}; re-queued (attempt ${fresh.attempts + 1} of ${fresh.maxAttempts})`;
        if (await this.jobs.requeue(fresh, reason, { countAttempt: true })) {
          await this.queue.enqueue(fresh);
          return;
        }
      }
    }
    await this.jobs.finish(job.id, workerId, 'failed', { error: this.failureOf(entry, code, signal, stderrTail)!.error, exitCode: code });
  }
}
