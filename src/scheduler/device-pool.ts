import type { DeviceIds, JobResources } from '../jobs/job.entity';
import type { DeviceInfo } from './worker.entity';

/** The devices of one worker and which are taken. Placement picks the lowest free ids. */
export class DevicePool {
  private readonly taken = new Set<string>();

  constructor(readonly devices: readonly DeviceInfo[]) {}

  get gpus(): DeviceInfo[] {
    return this.devices.filter((d) => d.kind === 'gpu');
  }

  get cpuSlots(): DeviceInfo[] {
    return this.devices.filter((d) => d.kind === 'cpu');
  }

  /** Whether this worker could run the job at all, if it were idle. */
  canEverFit(r: JobResources): boolean {
    return r.gpus <= this.gpus.length && r.cpu_slots <= this.cpuSlots.length;
  }

  /** The devices the job would get now, or null if they are not free. Takes nothing. */
  choose(r: JobResources): DeviceIds | null {
    const gpus = this.gpus.filter((d) => !this.taken.has(d.id)).slice(0, r.gpus);
    const cpus = this.cpuSlots.filter((d) => !this.taken.has(d.id)).slice(0, r.cpu_slots);
    if (gpus.length < r.gpus || cpus.length < r.cpu_slots) return null;
    return [...gpus, ...cpus].map((d) => d.id);
  }

  take(ids: DeviceIds): void {
    for (const id of ids) this.taken.add(id);
  }

  release(ids: DeviceIds): void {
    for (const id of ids) this.taken.delete(id);
  }

  get idle(): boolean {
    return this.taken.size === 0;
  }

  get hasFree(): boolean {
    return this.devices.some((d) => !this.taken.has(d.id));
  }
}

/** `CUDA_VISIBLE_DEVICES` for a set of devices: the GPU indices, or empty to hide every GPU. */
export function cudaVisibleDevices(ids: DeviceIds): string {
  return ids
    .filter((id) => id.startsWith('gpu:'))
    .map((id) => id.slice(4))
    .join(',');
}

/**
 * Compute threads for a job's engine (its native matrix product): the CPU slots it was given, at least one. A job never
 * runs more threads than the slots it holds, so two jobs on one worker do not oversubscribe its cores.
 */
export function cpuThreads(ids: DeviceIds): number {
  return Math.max(1, ids.filter((id) => id.startsWith('cpu:')).length);
}
