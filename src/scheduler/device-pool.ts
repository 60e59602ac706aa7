import type { DeviceIds, JobResources } from '../jobs/job.entity';
import type { DeviceInfo } from './worker.entity';

/**
 * The devices of one machine and which are taken, by the worker's jobs and by the API's model servers
 * alike (`DevicePoolService` holds the process's one pool). Placement picks the lowest free ids.
 */
export class DevicePool {
  private readonly taken = new Set<string>();
  /** Called after each release: {@link acquire}s waiting for devices try again. */
  private readonly waiters = new Set<() => void>();

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
    for (const retry of [...this.waiters]) retry();
  }

  /**
   * Takes the devices `r` asks for as soon as they are free, waiting at most `timeoutMs`. Rejects at once
   * when this machine could never hold them, and with what is busy when the time is up.
   */
  acquire(r: JobResources, timeoutMs: number): Promise<DeviceIds> {
    if (!this.canEverFit(r)) {
      return Promise.reject(new Error(`it needs ${r.gpus} GPU(s) and ${r.cpu_slots} CPU slot(s); this machine offers ${this.gpus.length} and ${this.cpuSlots.length}`));
    }
    return new Promise((resolve, reject) => {
      const retry = (): void => {
        const ids = this.choose(r);
        if (!ids) return;
        this.take(ids);
        this.waiters.delete(retry);
        clearTimeout(timer);
        resolve(ids);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(retry);
        reject(
          new Error(
            `its ${r.gpus} GPU(s) and ${r.cpu_slots} CPU slot(s) did not free up within ${timeoutMs / 1000} s (${this.taken.size} of ${this.devices.length} devices are in use)`,
          ),
        );
      }, timeoutMs);
      this.waiters.add(retry);
      retry();
    });
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
