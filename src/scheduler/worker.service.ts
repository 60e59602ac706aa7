import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { hostname } from 'node:os';
import { AppConfig } from '../config/app-config';
import { LocalBus } from '../core/local-bus';
import { findJobKind } from '../jobs/kinds/job-kinds';
import { JobEventsRepository, MetricPoint } from '../jobs/job-events.repository';
import type { JobEntity } from '../jobs/job.entity';
import { JobsRepository } from '../jobs/jobs.repository';
import type { RunnerMessage } from '../runner/runner-protocol';
import { detectDevices } from './device-detector';
import { DevicePool } from './device-pool';
import { JobProcess } from './job-process';
import { JOB_QUEUE } from './job-queue';
import type { JobQueue } from './job-queue';
import { WorkerEntity } from './worker.entity';
import { WorkersRepository } from './workers.repository';

export const RUNNER_ENTRY = Symbol('RunnerEntry');

const DISPATCH_MS = 500;
const LOG_FLUSH_MS = 300;
/** Log text kept in the database per job; the file on the worker keeps everything. */
const DB_LOG_LIMIT = 8 * 1024 * 1024;

interface Running {
  job: JobEntity;
  process: JobProcess;
  /** Serialises this job's database writes so they land in the order the runner sent them. */
  writes: Promise<void>;
  log: { buffer: string; stored: number; truncated: boolean; timer?: NodeJS.Timeout };
  stopReason?: 'cancel' | 'shutdown' | 'lost';
  failure?: string;
}

/**
 * A worker: offers this machine's devices, claims jobs that fit from the queue, runs each in a job runner
 * child process, records what the runner reports, renews the leases of its jobs and honours
 * cancellation. Runs inside `opentinker serve` by default, or alone as `opentinker worker`.
 */
@Injectable()
export class WorkerService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Worker');
  readonly id: string;
  private pool!: DevicePool;
  private readonly running = new Map<string, Running>();
  private dispatchTimer?: NodeJS.Timeout;
  private heartbeatTimer?: NodeJS.Timeout;
  private dispatching = false;
  private again = false;
  private stopping = false;
  private unsubscribe?: () => void;

  constructor(
    private readonly config: AppConfig,
    private readonly jobs: JobsRepository,
    private readonly events: JobEventsRepository,
    private readonly workers: WorkersRepository,
    @Inject(JOB_QUEUE) private readonly queue: JobQueue,
    private readonly bus: LocalBus,
    @Inject(RUNNER_ENTRY) private readonly runnerEntry: string,
  ) {
    this.id = config.values.worker_id ?? `${hostname().replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 40)}-${randomBytes(4).toString('hex')}`;
  }

  async onApplicationBootstrap(): Promise<void> {
    const v = this.config.values;
    this.pool = new DevicePool(await detectDevices(v.gpus, v.cpu_slots));
    const now = Date.now();
    await this.workers.register(
      Object.assign(new WorkerEntity(), {
        id: this.id,
        hostname: hostname(),
        pid: process.pid,
        devices: this.pool.devices,
        startedAt: now,
        lastSeenAt: now,
        stoppedAt: null,
      }),
    );
    // A previous process with this worker id cannot be running anything now.
    for (const job of await this.jobs.activeOnWorker(this.id)) {
      await this.jobs.abandon(job, job.cancelRequestedAt ? 'cancelled' : 'failed', `Worker ${this.id} restarted while the job was running`);
    }
    const gpus = this.pool.gpus.length;
    this.logger.log(`Worker ${this.id} offers ${gpus} GPU(s) and ${this.pool.cpuSlots.length} CPU slot(s) (queue: ${this.queue.name})`);
    this.unsubscribe = this.bus.onJobQueued(() => this.kick());
    this.dispatchTimer = setInterval(() => this.kick(), DISPATCH_MS);
    this.heartbeatTimer = setInterval(() => void this.heartbeat(), v.heartbeat_seconds * 1000);
    this.kick();
  }

  /** Devices of this worker and which job holds each. */
  snapshot(): { id: string; pool: DevicePool } {
    return { id: this.id, pool: this.pool };
  }

  /** Looks for work now (coalesces concurrent calls). */
  kick(): void {
    if (this.stopping) return;
    if (this.dispatching) {
      this.again = true;
      return;
    }
    this.dispatching = true;
    void this.dispatch()
      .catch((error: Error) => this.logger.warn(`Dispatch failed: ${error.message}`))
      .finally(() => {
        this.dispatching = false;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async dispatch(): Promise<void> {
    while (!this.stopping && this.pool.hasFree) {
      const job = await this.queue.claimNext({ workerId: this.id, pool: this.pool, userLimit: this.config.values.max_jobs_per_user });
      if (!job) return;
      this.start(job);
    }
  }

  private start(job: JobEntity): void {
    const entry: Running = { job, writes: Promise.resolve(), log: { buffer: '', stored: 0, truncated: false } } as Running;
    entry.process = new JobProcess(job, {
      runnerEntry: this.runnerEntry,
      jobDir: this.config.jobDir(job.id),
      graceMs: this.config.values.cancel_grace_seconds * 1000,
      onMessage: (m) => this.onMessage(entry, m),
      onLog: (text) => this.onLog(entry, text),
    });
    this.running.set(job.id, entry);
    this.logger.log(`Started job ${job.id} (${job.kind}) on ${job.devices?.join(', ') || 'no devices'}, pid ${entry.process.pid}`);
    void entry.process.exited.then((exit) => this.onExit(entry, exit.code, exit.signal, exit.stderrTail));
  }

  private write(entry: Running, work: () => Promise<unknown>): void {
    entry.writes = entry.writes
      .then(work)
      .then(() => this.bus.jobEvents(entry.job.id))
      .catch((error: Error) => this.logger.warn(`Job ${entry.job.id}: could not record runner output: ${error.message}`));
  }

  private onMessage(entry: Running, m: RunnerMessage): void {
    const id = entry.job.id;
    switch (m.type) {
      case 'running':
        return this.write(entry, () => this.jobs.markRunning(id, this.id));
      case 'progress':
        return this.write(entry, async () => {
          const progress = { step: m.step, total: m.total, message: m.message };
          await this.jobs.saveProgress(id, progress);
          await this.events.append(id, 'progress', progress);
        });
      case 'metrics': {
        const points: MetricPoint[] = Object.entries(m.values)
          .filter(([, v]) => typeof v === 'number' && Number.isFinite(v))
          .map(([name, value]) => ({ step: m.step, name: name.slice(0, 128), value }));
        return this.write(entry, () => this.events.appendMetrics(id, points));
      }
      case 'checkpoint':
        return this.write(entry, () => this.jobs.saveResumeState(id, this.id, m.state));
      case 'artifact':
        return this.write(entry, async () => {
          const size = statSync(m.path).size;
          await this.events.putArtifact({ jobId: id, name: m.name, path: m.path, size, workerId: this.id, createdAt: Date.now() });
          await this.events.append(id, 'artifact', { name: m.name, size });
        });
      case 'failed':
        entry.failure = m.message;
        return;
      case 'done':
        return;
    }
  }

  private onLog(entry: Running, text: string): void {
    const log = entry.log;
    if (log.truncated) return;
    log.buffer += text;
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
      text = text.slice(0, Math.max(0, DB_LOG_LIMIT - log.stored)) +
        `\n[log truncated here: the full log is ${this.config.jobDir(entry.job.id)}/job.log on worker ${this.id}]\n`;
      log.truncated = true;
    }
    log.stored += text.length;
    this.write(entry, () => this.events.append(entry.job.id, 'log', { text }));
  }

  private async onExit(entry: Running, code: number | null, signal: NodeJS.Signals | null, stderrTail: string[]): Promise<void> {
    const { job } = entry;
    this.flushLog(entry);
    await entry.writes;
    this.running.delete(job.id);
    this.pool.release(job.devices ?? []);
    try {
      await this.recordExit(entry, code, signal, stderrTail);
    } catch (error) {
      this.logger.error(`Job ${job.id}: could not record its end: ${(error as Error).message}`);
    }
    this.bus.jobEvents(job.id);
    this.kick();
  }

  private async recordExit(entry: Running, code: number | null, signal: NodeJS.Signals | null, stderrTail: string[]): Promise<void> {
    const { job } = entry;
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    this.logger.log(`Job ${job.id} runner ${how}${entry.stopReason ? ` (${entry.stopReason})` : ''}`);
    switch (entry.stopReason) {
      case 'lost':
        return;
      case 'cancel':
        await this.jobs.finish(job.id, this.id, 'cancelled', { exitCode: code });
        return;
      case 'shutdown': {
        const kind = findJobKind(job.kind);
        const fresh = (await this.jobs.findById(job.id)) ?? job;
        if (kind?.resumable && !fresh.cancelRequestedAt) {
          if (await this.jobs.requeue(fresh, `worker ${this.id} shut down; the job will resume`, { countAttempt: false })) {
            await this.queue.enqueue(fresh);
          }
        } else {
          await this.jobs.finish(job.id, this.id, fresh.cancelRequestedAt ? 'cancelled' : 'failed', {
            error: `Worker ${this.id} shut down while the job was running`,
            exitCode: code,
          });
        }
        return;
      }
    }
    if (code === 0) {
      await this.jobs.finish(job.id, this.id, 'succeeded', { exitCode: 0 });
      return;
    }
    const error = entry.failure ?? `The job runner ${how}${stderrTail.length ? `: ${stderrTail.slice(-3).join(' | ')}` : ''}`;
    await this.jobs.finish(job.id, this.id, 'failed', { error, exitCode: code });
  }

  private async heartbeat(): Promise<void> {
    try {
      await this.workers.heartbeat(this.id, Date.now());
      const { cancel, lost } = await this.jobs.renewLeases(this.id, [...this.running.keys()]);
      for (const id of cancel) this.stopJob(id, 'cancel');
      for (const id of lost) this.stopJob(id, 'lost');
    } catch (error) {
      this.logger.warn(`Heartbeat failed: ${(error as Error).message}`);
    }
  }

  private stopJob(id: string, reason: 'cancel' | 'shutdown' | 'lost'): void {
    const entry = this.running.get(id);
    if (!entry || entry.stopReason) return;
    entry.stopReason = reason;
    this.logger.log(`Stopping job ${id} (${reason})`);
    entry.process.stop();
  }

  /** Runs before the database and queue close, so every job's end is recorded. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    clearInterval(this.dispatchTimer);
    clearInterval(this.heartbeatTimer);
    this.unsubscribe?.();
    const exits = [...this.running.values()].map((e) => e.process.exited);
    for (const id of this.running.keys()) this.stopJob(id, 'shutdown');
    await Promise.all(exits);
    // onExit records each job's end asynchronously; wait until all have been handled.
    while (this.running.size > 0) await new Promise((r) => setTimeout(r, 20));
    await this.workers.stopped(this.id, Date.now()).catch(() => undefined);
  }
}
