import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { JobsRepository } from '../jobs/jobs.repository';
import type { DeviceInfo } from './worker.entity';
import { WorkersRepository } from './workers.repository';

export interface WorkerDevices {
  workerId: string;
  hostname: string;
  lastSeenAt: number;
  devices: (DeviceInfo & { jobId: string | null })[];
}

@Injectable()
export class DevicesService {
  constructor(
    private readonly config: AppConfig,
    private readonly workers: WorkersRepository,
    private readonly jobs: JobsRepository,
  ) {}

  /** Live workers (heartbeat within one lease) with each device and the job that holds it. */
  async list(): Promise<WorkerDevices[]> {
    const since = Date.now() - this.config.values.lease_seconds * 1000;
    const [workers, active] = await Promise.all([this.workers.alive(since), this.jobs.activeWithDevices()]);
    const holder = new Map<string, string>();
    for (const job of active) for (const device of job.devices ?? []) holder.set(`${job.workerId}/${device}`, job.id);
    return workers.map((w) => ({
      workerId: w.id,
      hostname: w.hostname,
      lastSeenAt: w.lastSeenAt,
      devices: w.devices.map((d) => ({ ...d, jobId: holder.get(`${w.id}/${d.id}`) ?? null })),
    }));
  }
}
