import type { DeviceIds, JobResources } from '../jobs/job.entity';
import type { DeviceInfo } from './worker.entity';

/**
 * A holder of devices that gives them back when a job needs them: one of the API's model servers.
 */
export interface Evictable {
  /** Loaded and answering nothing, so it may be stopped now (never one in the middle of a request). */
  readonly idle: boolean;
  /** Order of last use: the least recently used idle holder is evicted first. */
  readonly lastUsed: number;
  /** Stops it; resolves once it has exited and given its devices back ({@link DevicePool.release}). */
  evict(): Promise<void>;
}

/**
 * The devices of one machine and which are taken, by the worker's jobs and by the API's model servers
 * alike (`DevicePoolService` holds the process's one pool). Placement picks the lowest free ids.
 *
 * Jobs come first: a model server holds its devices while it runs, but an idle one is evicted when a
 * queued job needs its devices ({@link makeRoom}), and the devices it gives back are kept for that job
 * until the worker has tried to claim it ({@link unreserve}), so another model server cannot take them
 * in between.
 */
export class DevicePool {
  private readonly taken = new Set<string>();
  /** Devices held by model servers, and which one holds each. */
  private readonly modelServers = new Map<string, Evictable>();
  /** Devices freed by evicting model servers for a job: jobs may take them, model servers may not. */
  private readonly reserved = new Set<string>();
  /** Called after each release: {@link acquire}s waiting for devices try again. */
  private readonly waiters = new Set<() => void>();
  /** Called when the devices model servers hold change. */
  private readonly listeners = new Set<(ids: DeviceIds) => void>();

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

  /** The devices a job would get now, or null if they are not free. Takes nothing. */
  choose(r: JobResources): DeviceIds | null {
    return this.chooseAmong(r, (id) => !this.taken.has(id));
  }

  private chooseAmong(r: JobResources, usable: (id: string) => boolean): DeviceIds | null {
    const gpus = this.gpus.filter((d) => usable(d.id)).slice(0, r.gpus);
    const cpus = this.cpuSlots.filter((d) => usable(d.id)).slice(0, r.cpu_slots);
    if (gpus.length < r.gpus || cpus.length < r.cpu_slots) return null;
    return [...gpus, ...cpus].map((d) => d.id);
  }

  take(ids: DeviceIds): void {
    for (const id of ids) this.taken.add(id);
  }

  release(ids: DeviceIds): void {
    let modelServer = false;
    for (const id of ids) {
      this.taken.delete(id);
      modelServer = this.modelServers.delete(id) || modelServer;
    }
    if (modelServer) this.changed();
    for (const retry of [...this.waiters]) retry();
  }

  /**
   * Takes the devices `r` asks for as soon as they are free (and not kept for a job), waiting at most
   * `timeoutMs`; `holder`, a model server, may then be evicted by {@link makeRoom}. Rejects at once when
   * this machine could never hold them, and with what is busy when the time is up.
   */
  acquire(r: JobResources, timeoutMs: number, holder?: Evictable): Promise<DeviceIds> {
    if (!this.canEverFit(r)) {
      return Promise.reject(new Error(`it needs ${r.gpus} GPU(s) and ${r.cpu_slots} CPU slot(s); this machine offers ${this.gpus.length} and ${this.cpuSlots.length}`));
    }
    return new Promise((resolve, reject) => {
      const retry = (): void => {
        const ids = this.chooseAmong(r, (id) => !this.taken.has(id) && !this.reserved.has(id));
        if (!ids) return;
        this.take(ids);
        if (holder) {
          for (const id of ids) this.modelServers.set(id, holder);
          this.changed();
        }
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

  /**
   * Makes the job's devices free now if idle model servers stand in the way: when the free devices and
   * those of idle model servers together hold `r`, evicts the fewest such servers needed, least recently
   * used first, and waits until they have exited. Their devices are kept for the job until
   * {@link unreserve}. Resolves whether `r` fits now.
   */
  async makeRoom(r: JobResources): Promise<boolean> {
    if (this.choose(r)) return true;
    const idle = [...new Set(this.modelServers.values())].filter((h) => h.idle).sort((a, b) => a.lastUsed - b.lastUsed);
    const freed = new Set<string>();
    const evicted: Evictable[] = [];
    const fits = () => this.chooseAmong(r, (id) => !this.taken.has(id) || freed.has(id)) !== null;
    for (const holder of idle) {
      if (fits()) break;
      evicted.push(holder);
      for (const [id, h] of this.modelServers) if (h === holder) freed.add(id);
    }
    if (!fits()) return false;
    for (const id of freed) this.reserved.add(id);
    await Promise.all(evicted.map((h) => h.evict()));
    return this.choose(r) !== null;
  }

  /** Ends what {@link makeRoom} kept for a job: model servers may take those devices again. */
  unreserve(): void {
    if (this.reserved.size === 0) return;
    this.reserved.clear();
    for (const retry of [...this.waiters]) retry();
  }

  /** Devices held by model servers now. */
  get modelServerDevices(): DeviceIds {
    return [...this.modelServers.keys()].sort();
  }

  /** Calls `listener` with {@link modelServerDevices} whenever they change; returns the unsubscribe. */
  onModelServersChanged(listener: (ids: DeviceIds) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(): void {
    const ids = this.modelServerDevices;
    for (const listener of this.listeners) listener(ids);
  }

  get idle(): boolean {
    return this.taken.size === 0;
  }

  get hasFree(): boolean {
    return this.devices.some((d) => !this.taken.has(d.id));
  }

  /** Whether an idle model server holds devices a job could have by evicting it. */
  get hasEvictable(): boolean {
    for (const holder of this.modelServers.values()) if (holder.idle) return true;
    return false;
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
