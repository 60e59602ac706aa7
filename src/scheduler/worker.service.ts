import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { AppConfig } from '../config/app-config';
import { LocalBus } from '../core/local-bus';
import type { Role } from '../auth/user.entity';
import { UsersRepository } from '../auth/users.repository';
import { StorageQuota } from '../datasets/storage-quota.service';
import { hubReposIn } from '../hub/hub-access';
import { HubAccessService } from '../hub/hub-access.service';
import type { JobHubAccess } from '../hub/job-hub';
import type { JobEntity } from '../jobs/job.entity';
import { SecretsKeyError } from '../jobs/job-secrets-cipher';
import { JobsRepository } from '../jobs/jobs.repository';
import { DevicePool } from './device-pool';
import { DevicePoolService } from './device-pool.service';
import { JOB_QUEUE } from './job-queue';
import type { JobQueue } from './job-queue';
import { JobSupervisor } from './job-supervisor.service';
import { WorkerEntity } from './worker.entity';
import { WorkersRepository } from './workers.repository';

const DISPATCH_MS = 500;

/**
 * A worker: offers this machine's devices, claims jobs that fit from the queue and hands them to the
 * {@link JobSupervisor}, renews the leases of its jobs and relays cancellation. Runs inside
 * `opentinker serve` by default, or alone as `opentinker worker`.
 */
@Injectable()
export class WorkerService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Worker');
  readonly id: string;
  private pool!: DevicePool;
  private dispatchTimer?: NodeJS.Timeout;
  private heartbeatTimer?: NodeJS.Timeout;
  private dispatching = false;
  private again = false;
  private stopping = false;
  private unsubscribe?: () => void;
  private modelServerDevices: string[] = [];
  private recording = false;

  constructor(
    private readonly config: AppConfig,
    private readonly jobs: JobsRepository,
    private readonly workers: WorkersRepository,
    @Inject(JOB_QUEUE) private readonly queue: JobQueue,
    private readonly bus: LocalBus,
    private readonly supervisor: JobSupervisor,
    private readonly users: UsersRepository,
    private readonly devices: DevicePoolService,
    private readonly hubAccess: HubAccessService,
    private readonly quota: StorageQuota,
  ) {
    this.id =
      config.values.worker_id ??
      `${hostname()
        .replace(/[^A-Za-z0-9._-]/g, '-')
        .slice(0, 40)}-${randomBytes(4).toString('hex')}`;
  }

  async onApplicationBootstrap(): Promise<void> {
    const v = this.config.values;
    this.pool = await this.devices.get();
    const now = Date.now();
    await this.workers.register(
      Object.assign(new WorkerEntity(), {
        id: this.id,
        hostname: hostname(),
        pid: process.pid,
        devices: this.pool.devices,
        modelServerDevices: this.pool.modelServerDevices,
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
    const unsubscribeQueued = this.bus.onJobQueued(() => this.kick());
    // The API's model servers in this process take devices from this worker's pool: shown by GET /v1/devices.
    const unsubscribeModels = this.pool.onModelServersChanged((ids) => this.recordModelServers(ids));
    this.unsubscribe = () => {
      unsubscribeQueued();
      unsubscribeModels();
    };
    this.dispatchTimer = setInterval(() => this.kick(), DISPATCH_MS);
    this.heartbeatTimer = setInterval(() => void this.heartbeat(), v.heartbeat_seconds * 1000);
    this.kick();
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

  /**
   * Writes which devices model servers hold to this worker's row, one write at a time, the newest last
   * (model servers start and stop rarely, so this is a write per start or stop).
   */
  private recordModelServers(ids: string[]): void {
    this.modelServerDevices = ids;
    // Shutting down: the row is marked stopped, and the database may be closing.
    if (this.recording || this.stopping) return;
    this.recording = true;
    void (async () => {
      try {
        for (let written: string[] | null = null; written !== this.modelServerDevices && !this.stopping;) {
          written = this.modelServerDevices;
          await this.workers.setModelServerDevices(this.id, written).catch((e: Error) => this.logger.warn(`Could not record model servers' devices: ${e.message}`));
        }
      } finally {
        this.recording = false;
      }
    })();
  }

  /** Claims jobs while devices are free, or held by idle model servers a job may evict. */
  private async dispatch(): Promise<void> {
    while (!this.stopping && (this.pool.hasFree || this.pool.hasEvictable)) {
      const job = await this.queue.claimNext({ workerId: this.id, pool: this.pool, userLimit: this.config.values.max_jobs_per_user });
      if (!job) return;
      let launch: Awaited<ReturnType<WorkerService['launchOf']>>;
      try {
        launch = await this.launchOf(job);
      } catch (error) {
        this.pool.release(job.devices ?? []);
        const message = (error as Error).message;
        if (error instanceof SecretsKeyError) {
          // Not this server's key: the job cannot run here or anywhere with this key; its error says what to set.
          this.logger.error(`Job ${job.id}: ${message}`);
          await this.jobs.finish(job.id, this.id, 'failed', { error: message });
          continue;
        }
        this.logger.warn(`Job ${job.id}: could not prepare its start (${message}); it goes back to the queue`);
        const fresh = (await this.jobs.findById(job.id)) ?? job;
        if (await this.jobs.requeue(fresh, `worker ${this.id} could not prepare its start`, { countAttempt: false })) await this.queue.enqueue(fresh);
        return;
      }
      this.supervisor.start(job, this.id, launch, () => {
        this.pool.release(job.devices ?? []);
        this.kick();
      });
    }
  }

  /**
   * What the job may reach depends on its owner (loopback environment servers, cached Hub snapshots,
   * their storage quota); its secrets (a remote environment's token, …) are kept apart from the spec,
   * decrypted here and handed to the runner.
   */
  private async launchOf(job: JobEntity): Promise<{ ownerIsAdmin: boolean; secrets: Record<string, string>; hub: JobHubAccess }> {
    const owner = await this.users.findUser(job.ownerId).catch(() => null);
    const secrets = await this.jobs.secretsOf(job.id);
    return { ownerIsAdmin: owner?.role === 'admin', secrets, hub: await this.hubAccessOf(job, owner?.role ?? 'user') };
  }

  /** The owner's records of the Hub repos the spec names, and what their storage quota has left for downloads. */
  private async hubAccessOf(job: JobEntity, role: Role): Promise<JobHubAccess> {
    const repos = hubReposIn(job.spec);
    const access: JobHubAccess = { userId: job.ownerId, admin: role === 'admin', granted: [], budgetBytes: null, quotaBytes: this.config.values.storage_quota_bytes };
    if (repos.length === 0) return access;
    const [granted, left] = await Promise.all([this.hubAccess.grantedTo(job.ownerId, repos), this.quota.remaining({ userId: job.ownerId, role })]);
    return { ...access, granted, budgetBytes: Number.isFinite(left) ? Math.max(0, left) : null };
  }

  private async heartbeat(): Promise<void> {
    try {
      await this.workers.heartbeat(this.id, Date.now());
      const { cancel, lost } = await this.jobs.renewLeases(this.id, this.supervisor.runningIds);
      for (const id of cancel) this.supervisor.stop(id, 'cancel');
      for (const id of lost) this.supervisor.stop(id, 'lost');
    } catch (error) {
      this.logger.warn(`Heartbeat failed: ${(error as Error).message}`);
    }
  }

  /** Runs before the database and queue close, so every job's end is recorded. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    clearInterval(this.dispatchTimer);
    clearInterval(this.heartbeatTimer);
    this.unsubscribe?.();
    await this.supervisor.stopAll();
    await this.workers.stopped(this.id, Date.now()).catch(() => undefined);
  }
}
