import { Injectable } from '@nestjs/common';
import { isAdmin, type Principal } from '../auth/principal';
import { AppConfig } from '../config/app-config';
import { JobsRepository } from '../jobs/jobs.repository';
import type { DeviceInfo } from './worker.entity';
import { WorkersRepository } from './workers.repository';

export interface WorkerDevices {
  workerId: string;
  hostname: string;
  lastSeenAt: number;
  devices: (DeviceInfo & { jobId: string | null; busy: boolean; heldBy: 'job' | 'model_server' | null })[];
}

@Injectable()
export class DevicesService {
  constructor(
    private readonly config: AppConfig,
    private readonly workers: WorkersRepository,
    private readonly jobs: JobsRepository,
  ) {}

  /**
   * Live workers (heartbeat within one lease) with each device and what holds it: a job, or one of the
   * API's model servers (chat). A plain user sees the ids of their own jobs only; another user's job
   * shows as busy (its id would name a checkpoint folder and a target for guessing), and a model server
   * shows as one, without which model it serves or for whom.
   */
  async list(caller: Principal): Promise<WorkerDevices[]> {
    const since = Date.now() - this.config.values.lease_seconds * 1000;
    const [workers, active] = await Promise.all([this.workers.alive(since), this.jobs.activeWithDevices()]);
    const holder = new Map<string, { id: string; ownerId: string }>();
    for (const job of active) for (const device of job.devices ?? []) holder.set(`${job.workerId}/${device}`, { id: job.id, ownerId: job.ownerId });
    const visible = (job: { id: string; ownerId: string } | undefined) => (job && (isAdmin(caller) || job.ownerId === caller.userId) ? job.id : null);
    return workers.map((w) => ({
      workerId: w.id,
      hostname: w.hostname,
      lastSeenAt: w.lastSeenAt,
      devices: w.devices.map((d) => {
        const job = holder.get(`${w.id}/${d.id}`);
        const heldBy = job ? 'job' : w.modelServerDevices?.includes(d.id) ? 'model_server' : null;
        return { ...d, jobId: visible(job), busy: heldBy !== null, heldBy };
      }),
    }));
  }
}
