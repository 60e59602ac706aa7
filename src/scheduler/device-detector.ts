import { execFile } from 'node:child_process';
import type { DeviceInfo } from './worker.entity';

/** Parses `nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader,nounits`. */
export function parseNvidiaSmi(output: string): DeviceInfo[] {
  const gpus: DeviceInfo[] = [];
  for (const line of output.split('\n')) {
    const parts = line.split(',').map((s) => s.trim());
    if (parts.length < 3 || !/^\d+$/.test(parts[0])) continue;
    const memory = Number(parts[2]);
    gpus.push({ id: `gpu:${parts[0]}`, kind: 'gpu', name: parts[1], memoryMb: Number.isFinite(memory) ? memory : null });
  }
  return gpus;
}

function runNvidiaSmi(): Promise<string | null> {
  return new Promise((resolve) => {
    execFile('nvidia-smi', ['--query-gpu=index,name,memory.total', '--format=csv,noheader,nounits'], { timeout: 10_000 }, (error, stdout) => resolve(error ? null : stdout));
  });
}

/**
 * The devices a worker offers: GPUs (found with nvidia-smi when `gpus` is `auto`, or the listed
 * indices) plus `cpuSlots` CPU slots.
 */
export async function detectDevices(gpus: string, cpuSlots: number, smi = runNvidiaSmi): Promise<DeviceInfo[]> {
  let found: DeviceInfo[] = [];
  if (gpus === 'auto') {
    const out = await smi();
    found = out ? parseNvidiaSmi(out) : [];
  } else if (gpus !== 'none') {
    const out = await smi();
    const known = new Map((out ? parseNvidiaSmi(out) : []).map((d) => [d.id, d]));
    found = gpus.split(',').map((i) => known.get(`gpu:${i}`) ?? { id: `gpu:${i}`, kind: 'gpu', name: 'GPU', memoryMb: null });
  }
  const cpus: DeviceInfo[] = Array.from({ length: cpuSlots }, (_, i) => ({ id: `cpu:${i}`, kind: 'cpu', name: 'CPU slot', memoryMb: null }));
  return [...found, ...cpus];
}
