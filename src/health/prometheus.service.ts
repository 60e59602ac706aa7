import { Inject, Injectable } from '@nestjs/common';
import { Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { AppConfig } from '../config/app-config';
import { JOB_STATES } from '../jobs/job.entity';
import { JobEventsRepository } from '../jobs/job-events.repository';
import { JobsRepository } from '../jobs/jobs.repository';
import { JOB_QUEUE } from '../scheduler/job-queue';
import type { JobQueue } from '../scheduler/job-queue';
import { WorkersRepository } from '../scheduler/workers.repository';

/** The metric series a running job's throughput gauge reads, by its `phase` label. */
const THROUGHPUT_SERIES = { sampling: 'perf/sampled_tokens_per_s', training: 'perf/trained_tokens_per_s' } as const;
const REWARD_SERIES = 'reward/mean';
/** One database read serves the gauges of one scrape (they collect concurrently). */
const SNAPSHOT_MS = 1000;

interface RunningJob {
  id: string;
  kind: string;
  step: number | null;
  latest: Map<string, number>;
}

/**
 * Prometheus metrics: request latency (observed per request), job and queue gauges, and per running job
 * its step, reward mean and token throughput (read on scrape from what the jobs reported, whichever
 * worker runs them; a job's series disappear once it ends).
 */
@Injectable()
export class PrometheusService {
  readonly registry = new Registry();
  readonly requestDuration: Histogram<'method' | 'route' | 'status'>;

  constructor(config: AppConfig, jobs: JobsRepository, events: JobEventsRepository, workers: WorkersRepository, @Inject(JOB_QUEUE) queue: JobQueue) {
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
    let snapshot: { at: number; jobs: Promise<RunningJob[]> } | null = null;
    const running = (): Promise<RunningJob[]> => {
      if (!snapshot || Date.now() - snapshot.at > SNAPSHOT_MS) {
        const read = (async () => {
          const active = await jobs.active();
          const points = await events.latestPoints(
            active.map((j) => j.id),
            [REWARD_SERIES, ...Object.values(THROUGHPUT_SERIES)],
          );
          return active.map((j) => ({
            id: j.id,
            kind: j.kind,
            step: j.progress?.step ?? null,
            latest: new Map(points.filter((p) => p.jobId === j.id).map((p) => [p.name, p.value])),
          }));
        })();
        snapshot = { at: Date.now(), jobs: read };
        read.catch(() => (snapshot = null));
      }
      return snapshot.jobs;
    };
    new Gauge({
      name: 'opentinker_job_step',
      help: 'Step a running job last reported (train: RL steps; inference: episodes done)',
      labelNames: ['job_id', 'kind'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const j of await running()) if (j.step !== null) this.set({ job_id: j.id, kind: j.kind }, j.step);
      },
    });
    new Gauge({
      name: 'opentinker_job_reward_mean',
      help: `Latest ${REWARD_SERIES} of a running job`,
      labelNames: ['job_id', 'kind'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const j of await running()) {
          const v = j.latest.get(REWARD_SERIES);
          if (v !== undefined) this.set({ job_id: j.id, kind: j.kind }, v);
        }
      },
    });
    new Gauge({
      name: 'opentinker_job_tokens_per_second',
      help: `Latest token throughput of a running job: phase sampling (${THROUGHPUT_SERIES.sampling}) or training (${THROUGHPUT_SERIES.training})`,
      labelNames: ['job_id', 'kind', 'phase'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const j of await running()) {
          for (const [phase, series] of Object.entries(THROUGHPUT_SERIES)) {
            const v = j.latest.get(series);
            if (v !== undefined) this.set({ job_id: j.id, kind: j.kind, phase }, v);
          }
        }
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
