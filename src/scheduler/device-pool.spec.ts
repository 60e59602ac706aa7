import { detectDevices, parseNvidiaSmi } from './device-detector';
import { cpuThreads, cudaVisibleDevices, DevicePool, type Evictable } from './device-pool';

describe('parseNvidiaSmi', () => {
  it('reads index, name and memory, skipping noise', () => {
    const out = '0, NVIDIA H100 80GB HBM3, 81559\n1, NVIDIA H100 80GB HBM3, 81559\nNo devices were found\n';
    expect(parseNvidiaSmi(out)).toEqual([
      { id: 'gpu:0', kind: 'gpu', name: 'NVIDIA H100 80GB HBM3', memoryMb: 81559 },
      { id: 'gpu:1', kind: 'gpu', name: 'NVIDIA H100 80GB HBM3', memoryMb: 81559 },
    ]);
  });
});

describe('detectDevices', () => {
  const smi = async () => '0, A, 100\n1, B, 200\n';
  it('uses nvidia-smi for auto, the listed indices otherwise, none on request', async () => {
    expect((await detectDevices('auto', 1, smi)).map((d) => d.id)).toEqual(['gpu:0', 'gpu:1', 'cpu:0']);
    expect((await detectDevices('1', 0, smi)).map((d) => [d.id, d.name])).toEqual([['gpu:1', 'B']]);
    expect((await detectDevices('none', 2, smi)).map((d) => d.id)).toEqual(['cpu:0', 'cpu:1']);
    expect((await detectDevices('auto', 1, async () => null)).map((d) => d.id)).toEqual(['cpu:0']);
  });
});

describe('DevicePool', () => {
  const pool = () =>
    new DevicePool([
      { id: 'gpu:0', kind: 'gpu', name: 'g', memoryMb: 1 },
      { id: 'gpu:1', kind: 'gpu', name: 'g', memoryMb: 1 },
      { id: 'cpu:0', kind: 'cpu', name: 'c', memoryMb: null },
      { id: 'cpu:1', kind: 'cpu', name: 'c', memoryMb: null },
    ]);

  it('places jobs on the lowest free devices and frees them', () => {
    const p = pool();
    const a = p.choose({ gpus: 1, cpu_slots: 1 })!;
    expect(a).toEqual(['gpu:0', 'cpu:0']);
    p.take(a);
    expect(p.choose({ gpus: 2, cpu_slots: 0 })).toBeNull();
    expect(p.choose({ gpus: 1, cpu_slots: 1 })).toEqual(['gpu:1', 'cpu:1']);
    p.release(a);
    expect(p.choose({ gpus: 2, cpu_slots: 2 })).toEqual(['gpu:0', 'gpu:1', 'cpu:0', 'cpu:1']);
    expect(p.idle).toBe(true);
  });

  it('tells jobs it could never run', () => {
    expect(pool().canEverFit({ gpus: 3, cpu_slots: 0 })).toBe(false);
    expect(pool().canEverFit({ gpus: 2, cpu_slots: 2 })).toBe(true);
  });

  it('acquire takes free devices at once, waits for a release, and gives up after its timeout', async () => {
    const p = pool();
    const job = p.choose({ gpus: 0, cpu_slots: 2 })!;
    p.take(job);
    expect(await p.acquire({ gpus: 1, cpu_slots: 0 }, 1000)).toEqual(['gpu:0']);
    const waiting = p.acquire({ gpus: 0, cpu_slots: 1 }, 5000);
    p.release(job);
    expect(await waiting).toEqual(['cpu:0']);
    // The model server holds cpu:0, so the job's two slots are not free together.
    expect(p.choose({ gpus: 0, cpu_slots: 2 })).toBeNull();
    p.take(['cpu:1']);
    await expect(p.acquire({ gpus: 0, cpu_slots: 1 }, 50)).rejects.toThrow(/did not free up within 0.05 s \(3 of 4 devices are in use\)/);
    await expect(p.acquire({ gpus: 0, cpu_slots: 3 }, 1000)).rejects.toThrow(/this machine offers 2 and 2/);
  });

  it('evicts the fewest idle model servers a job needs, least recently used first, and keeps their devices for the job', async () => {
    const p = pool();
    const changes: string[][] = [];
    p.onModelServersChanged((ids) => changes.push(ids));
    const evicted: string[] = [];
    /** A model server holding what it acquired; evicting it gives that back. */
    const server = async (name: string, lastUsed: number, r: { gpus: number; cpu_slots: number }, idle = true): Promise<Evictable> => {
      const s: Evictable = { idle, lastUsed, evict: async () => (evicted.push(name), p.release(ids)) };
      const ids = await p.acquire(r, 100, s);
      return s;
    };
    await server('old', 1, { gpus: 0, cpu_slots: 1 });
    await server('recent', 2, { gpus: 0, cpu_slots: 1 });
    await server('busy', 0, { gpus: 1, cpu_slots: 0 }, false);
    expect(p.modelServerDevices).toEqual(['cpu:0', 'cpu:1', 'gpu:0']);
    expect(changes.at(-1)).toEqual(['cpu:0', 'cpu:1', 'gpu:0']);
    expect(p.hasFree && p.hasEvictable).toBe(true);

    // Two GPUs: only the busy server holds the other one, so nothing is evicted.
    expect(await p.makeRoom({ gpus: 2, cpu_slots: 0 })).toBe(false);
    expect(evicted).toEqual([]);
    // One CPU slot: the least recently used idle server goes, and a model server waiting for a slot does not get it.
    const waiting = p.acquire({ gpus: 0, cpu_slots: 1 }, 5000);
    expect(await p.makeRoom({ gpus: 0, cpu_slots: 1 })).toBe(true);
    expect(evicted).toEqual(['old']);
    expect(p.modelServerDevices).toEqual(['cpu:1', 'gpu:0']);
    const job = p.choose({ gpus: 0, cpu_slots: 1 })!;
    expect(job).toEqual(['cpu:0']);
    p.take(job);
    p.unreserve();
    p.release(job);
    expect(await waiting).toEqual(['cpu:0']);
  });

  it('builds CUDA_VISIBLE_DEVICES from GPU ids only', () => {
    expect(cudaVisibleDevices(['gpu:3', 'cpu:0', 'gpu:1'])).toBe('3,1');
    expect(cudaVisibleDevices(['cpu:0'])).toBe('');
  });
});

describe('cpuThreads', () => {
  it('is the number of CPU slots a job holds, at least one', () => {
    expect(cpuThreads(['cpu:0', 'cpu:1', 'gpu:0'])).toBe(2);
    expect(cpuThreads(['gpu:0'])).toBe(1);
    expect(cpuThreads([])).toBe(1);
  });
});
