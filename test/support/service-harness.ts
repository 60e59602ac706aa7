import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { ModuleRef } from '@nestjs/core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DataSource } from 'typeorm';
import { UsersRepository } from '../../src/auth/users.repository';
import { loadConfig, type AppConfig } from '../../src/config/app-config';
import type { SettingKey } from '../../src/config/settings';
import { LocalBus } from '../../src/core/local-bus';
import { openDatabase } from '../../src/database/data-source';
import { JobEventsRepository } from '../../src/jobs/job-events.repository';
import type { JobEntity } from '../../src/jobs/job.entity';
import { JobsRepository } from '../../src/jobs/jobs.repository';
import type { CallMessage } from '../../src/runner/runner-protocol';
import { DatasetsRepository } from '../../src/datasets/datasets.repository';
import { StorageQuota } from '../../src/datasets/storage-quota.service';
import { HubAccessService } from '../../src/hub/hub-access.service';
import { UserModelsRepository } from '../../src/models/user-models.repository';
import { DevicePoolService } from '../../src/scheduler/device-pool.service';
import { EmbeddedQueue } from '../../src/scheduler/embedded.queue';
import { FairDispatcher } from '../../src/scheduler/fair-dispatcher';
import type { JobExit, JobLauncher, JobProcessOptions, RunnerProcess } from '../../src/scheduler/job-process';
import type { ClaimRequest, JobQueue } from '../../src/scheduler/job-queue';
import { JobSupervisor } from '../../src/scheduler/job-supervisor.service';
import { LeaseReaper } from '../../src/scheduler/lease-reaper.service';
import { WorkerService } from '../../src/scheduler/worker.service';
import { WorkersRepository } from '../../src/scheduler/workers.repository';
import { SessionCallsRepository } from '../../src/sessions/session-calls.repository';
import { SessionRelayService } from '../../src/sessions/session-relay.service';
import { jobRow } from './test-databases';

/**
 * The service tier of tests: one service of the worker side built by hand, as Nest would build it, on
 * real repositories over a fresh, migrated SQLite database, with fakes for what lies outside the process:
 * the queue (the database, as embedded mode uses it, recording what was enqueued), the job runner child
 * processes ({@link FakeRunners}: a test says what a runner sends and how it ends) and the clock (Jest's
 * fake timers, so leases, heartbeats and idle times pass when the test says). A spec names the service it
 * tests and fails in milliseconds, where the same check end to end through HTTP needs real processes.
 *
 * @example
 * ```ts
 * const h = await serviceHarness({ cpu_slots: 1 });
 * const worker = await h.worker();
 * const job = await h.submit({ priority: 5 });
 * const runner = await h.runners.started(job.id);
 * runner.emit({ type: 'running' });
 * runner.exit(0);
 * await h.until(async () => (await h.jobs.findById(job.id))?.state === 'succeeded');
 * ```
 */

/** When the fake clock starts: the services' `Date.now()`. */
export const T0 = 1_765_800_000_000;

/** A job runner that is not a process: the test speaks for it. */
export class FakeRunner implements RunnerProcess {
  readonly pid = 40_000;
  /** What the worker sent it (session calls). */
  readonly sent: CallMessage[] = [];
  /** Whether the worker asked it to stop (cancel, shutdown, a lost lease). */
  stopped = false;
  readonly exited: Promise<JobExit>;
  private end!: (exit: JobExit) => void;

  constructor(
    readonly job: JobEntity,
    readonly options: JobProcessOptions,
  ) {
    this.exited = new Promise((resolve) => (this.end = resolve));
  }

  send(message: CallMessage): void {
    this.sent.push(message);
  }

  stop(): void {
    this.stopped = true;
  }

  /** A message as a real runner sends it over IPC (anything: the supervisor checks it). */
  emit(message: unknown): void {
    this.options.onMessage(message);
  }

  /** Output on the runner's stdout or stderr. */
  print(text: string): void {
    this.options.onLog(text);
  }

  exit(code: number | null, signal: NodeJS.Signals | null = null, stderrTail: string[] = []): void {
    this.end({ code, signal, stderrTail });
  }
}

/** The {@link JobLauncher} of the harness: every job it starts is a {@link FakeRunner}. */
export class FakeRunners {
  readonly all: FakeRunner[] = [];
  readonly launch: JobLauncher = (job, options) => {
    const runner = new FakeRunner(job, options);
    this.all.push(runner);
    return runner;
  };

  /** Ids of the jobs started, in order. */
  get startedIds(): string[] {
    return this.all.map((r) => r.job.id);
  }

  /** The runner of a job, once the worker has started it. */
  of(jobId: string): FakeRunner | undefined {
    return this.all.find((r) => r.job.id === jobId);
  }
}

/** The database as the queue (embedded mode), recording what was handed to it. */
export class RecordingQueue implements JobQueue {
  readonly name = 'embedded' as const;
  readonly enqueued: string[] = [];
  private readonly inner: EmbeddedQueue;

  constructor(jobs: JobsRepository) {
    this.inner = new EmbeddedQueue(jobs, new FairDispatcher(jobs));
  }

  async enqueue(job: JobEntity): Promise<void> {
    this.enqueued.push(job.id);
    await this.inner.enqueue();
  }

  async remove(): Promise<void> {}

  claimNext(request: ClaimRequest): Promise<JobEntity | null> {
    return this.inner.claimNext(request);
  }

  depth(): Promise<number> {
    return this.inner.depth();
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}
}

export interface ServiceHarness {
  config: AppConfig;
  db: DataSource;
  jobs: JobsRepository;
  events: JobEventsRepository;
  workers: WorkersRepository;
  users: UsersRepository;
  calls: SessionCallsRepository;
  hubAccess: HubAccessService;
  quota: StorageQuota;
  bus: LocalBus;
  queue: RecordingQueue;
  runners: FakeRunners;
  /** Inserts a queued job (a `sleep` job of alice, `u1`, unless `over` says otherwise) and hands it to the queue. */
  submit(over?: Partial<JobEntity>): Promise<JobEntity>;
  /** A supervisor that starts {@link FakeRunner}s. */
  supervisor(): JobSupervisor;
  /** A booted worker (devices offered, dispatching), over {@link supervisor} unless one is given. */
  worker(supervisor?: JobSupervisor): Promise<WorkerService>;
  leaseReaper(): LeaseReaper;
  /** The session relay, hooked into `supervisor` as its module would be. */
  sessionRelay(supervisor: JobSupervisor): SessionRelayService;
  /** Moves the fake clock (and runs the timers due) by `ms`. */
  advance(ms: number): Promise<void>;
  /** Lets the services' pending work run until `check` holds (no real time passes; fails after many turns). */
  until(check: () => boolean | Promise<boolean>): Promise<void>;
  close(): Promise<void>;
}

/**
 * A harness over a fresh database with users `u1` (alice), `u2` (bob) and `admin` (an admin), and the
 * settings given (on top of 2 CPU slots, no GPUs, quiet logs). Turns on Jest's fake timers until `close`.
 */
export async function serviceHarness(settings: Partial<Record<SettingKey, unknown>> = {}): Promise<ServiceHarness> {
  jest.useFakeTimers({ now: T0, doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
  // The services log through Nest's logger; a spec reads what they did from the database instead.
  Logger.overrideLogger(false);
  const home = mkdtempSync(join(tmpdir(), 'ot-service-'));
  const config = loadConfig({}, { home, gpus: 'none', cpu_slots: 2, log_level: 'error', ...settings });
  // The server's own way to open SQLite (migrations, transactions one after another); it tightens the
  // process's umask for the data folder, which this test process gets back.
  const umask = process.umask();
  const db = await openDatabase(config);
  process.umask(umask);
  await db.query(`INSERT INTO users (id, name, role, created_at) VALUES ('u1', 'alice', 'user', 1), ('u2', 'bob', 'user', 1), ('admin', 'root', 'admin', 1)`);

  const jobs = new JobsRepository(db, config);
  const events = new JobEventsRepository(db);
  const workers = new WorkersRepository(db);
  const users = new UsersRepository(db);
  const calls = new SessionCallsRepository(db);
  const hubAccess = new HubAccessService(db, config);
  const quota = new StorageQuota(config, new DatasetsRepository(db), jobs, new UserModelsRepository(db), hubAccess);
  const bus = new LocalBus();
  const queue = new RecordingQueue(jobs);
  const runners = new FakeRunners();
  const booted: WorkerService[] = [];
  const reapers: LeaseReaper[] = [];
  const relays: SessionRelayService[] = [];
  let seq = 0;

  const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
  const harness: ServiceHarness = {
    config,
    db,
    jobs,
    events,
    workers,
    users,
    calls,
    hubAccess,
    quota,
    bus,
    queue,
    runners,
    async submit(over = {}) {
      seq += 1;
      const job = jobRow(`00000000-0000-4000-8000-${String(seq).padStart(12, '0')}`, Date.now() + seq, over);
      await jobs.insert(job);
      await queue.enqueue(job);
      bus.jobQueued();
      return job;
    },
    supervisor: () => new JobSupervisor(config, jobs, events, queue, bus, hubAccess, runners.launch),
    async worker(supervisor = harness.supervisor()) {
      const worker = new WorkerService(config, jobs, workers, queue, bus, supervisor, users, new DevicePoolService(config), hubAccess, quota);
      await worker.onApplicationBootstrap();
      booted.push(worker);
      return worker;
    },
    leaseReaper() {
      const reaper = new LeaseReaper(config, jobs, workers, queue, bus);
      reapers.push(reaper);
      return reaper;
    },
    sessionRelay(supervisor) {
      const relay = new SessionRelayService(calls, bus, { get: () => supervisor } as unknown as ModuleRef);
      relay.onModuleInit();
      relays.push(relay);
      return relay;
    },
    async advance(ms) {
      await jest.advanceTimersByTimeAsync(ms);
    },
    async until(check) {
      for (let i = 0; i < 2000; i++) {
        if (await check()) return;
        await turn();
      }
      throw new Error('the services never got there (2000 turns of the event loop)');
    },
    async close() {
      // Shutting down waits in real time (the supervisor polls until its jobs' ends are recorded).
      jest.useRealTimers();
      for (const runner of runners.all) runner.exit(null, 'SIGKILL');
      for (const worker of booted) await worker.beforeApplicationShutdown();
      for (const reaper of reapers) reaper.onApplicationShutdown();
      for (const relay of relays) relay.onModuleDestroy();
      await db.destroy();
      rmSync(home, { recursive: true, force: true });
    },
  };
  return harness;
}
