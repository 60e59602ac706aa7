// src/scheduler owns which job runs next, the queues, the worker and its devices, job runner processes, leases and their reaper.
import { Inject, Injectable, Logger, Module, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { JobsDataModule } from '../jobs/jobs-data.module';
import { JobsRepository } from '../jobs/jobs.repository';
import { BullmqQueue } from './bullmq.queue';
import { EmbeddedQueue } from './embedded.queue';
import { FairDispatcher } from './fair-dispatcher';
import { JOB_QUEUE } from './job-queue';
import type { JobQueue } from './job-queue';
import { LeaseReaper } from './lease-reaper.service';
import { WorkersRepository } from './workers.repository';

const RECONCILE_MS = 30_000;

/** Closes the queue at shutdown and, for BullMQ, re-adds queued jobs that Redis does not hold. */
@Injectable()
class QueueKeeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Queue');
  private timer?: NodeJS.Timeout;

  constructor(@Inject(JOB_QUEUE) private readonly queue: JobQueue) {}

  async onApplicationBootstrap(): Promise<void> {
    const queue = this.queue;
    if (!(queue instanceof BullmqQueue)) return;
    // Redis may come up a moment after us (services starting together); past that, fail the boot.
    for (let attempt = 1; ; attempt++) {
      try {
        await queue.ping();
        break;
      } catch (error) {
        if (attempt >= 3) throw new Error(`Redis (OPENTINKER_REDIS_URL) is unreachable: ${(error as Error).message}`);
        this.logger.warn(`Waiting for Redis: ${(error as Error).message}`);
      }
    }
    const reconcile = () =>
      queue.reconcile().then(
        (n) => n > 0 && this.logger.warn(`Re-added ${n} queued job(s) missing from Redis`),
        (e: Error) => this.logger.warn(`Reconcile failed: ${e.message}`),
      );
    await reconcile();
    this.timer = setInterval(() => void reconcile(), RECONCILE_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.queue.close();
  }
}

@Module({
  imports: [JobsDataModule],
  providers: [
    {
      provide: JOB_QUEUE,
      inject: [AppConfig, JobsRepository],
      useFactory: (config: AppConfig, jobs: JobsRepository): JobQueue => {
        const dispatcher = new FairDispatcher(jobs);
        return config.values.redis_url ? new BullmqQueue(config.values.redis_url, jobs, dispatcher) : new EmbeddedQueue(jobs, dispatcher);
      },
    },
    WorkersRepository,
    LeaseReaper,
    QueueKeeper,
  ],
  exports: [JOB_QUEUE, WorkersRepository],
})
export class QueueModule {}
