import { Inject, Injectable } from '@nestjs/common';
import { Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { AppConfig } from '../config/app-config';
import { JOB_STATES } from '../jobs/job.entity';
import { JobsRepository } from '../jobs/jobs.repository';
import { JOB_QUEUE } from '../scheduler/job-queue';
import type { JobQueue } from '../scheduler/job-queue';
import { WorkersRepository } from '../scheduler/workers.repository';

/** Prometheus metrics: request latency (observed per request), job and queue gauges (read on scrape). */
@Injectable()
export class PrometheusService {
  readonly registry = new Registry();
  readonly requestDuration: Histogram<'method' | 'route' | 'status'>;

  constructor(
    config: AppConfig,
    jobs: JobsRepository,
    workers: WorkersRepository,
    @Inject(JOB_QUEUE) queue: JobQueue,
  ) {
    collectDefaultMetrics({ register: this.registry, prefix: 'opentinker_process_' });
    this.requestDuration = new Histogram({
      name: 'opentinker_http_request_duration_seconds',
      help: 'HTTP request latency by route and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [this.registry],
    });
    new Gauge({
      name: 'opentinker_jobs',
      help: 'Jobs by state',
      labelNames: ['state'],
      registers: [this.registry],
      async collect() {
        const counts = await jobs.countByState();
        for (const state of JOB_STATES) this.set({ state }, counts[state] ?? 0);
      },
    });
    new Gauge({
      name: 'opentinker_queue_depth',
      help: 'Jobs waiting in the queue',
      registers: [this.registry],
      async collect() {
        this.set(await queue.depth());
      },
    });
    new Gauge({
      name: 'opentinker_workers_alive',
      help: 'Workers that heartbeated within one lease',
      registers: [this.registry],
      async collect() {
        this.set((await workers.alive(Date.now() - config.values.lease_seconds * 1000)).length);
      },
    });
  }

  observe(method: string, route: string, status: number, seconds: number): void {
    this.requestDuration.observe({ method, route, status: String(status) }, seconds);
  }
}
