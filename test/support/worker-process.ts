import { ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { FAST } from './test-app';

/** Starts `opentinker worker` as a separate process, like an operator would. */
export function spawnWorker(env: Record<string, string>): ChildProcess & { output: string[] } {
  const fast: Record<string, string> = {};
  for (const [k, v] of Object.entries(FAST)) fast[`OPENTINKER_${k.toUpperCase()}`] = String(v);
  const child = spawn(process.execPath, [join(process.cwd(), 'bin', 'opentinker.js'), 'worker'], {
    env: { PATH: process.env.PATH ?? '', ...fast, OPENTINKER_GPUS: 'none', OPENTINKER_LOG_LEVEL: 'log', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  }) as ChildProcess & { output: string[] };
  child.output = [];
  child.stdout!.on('data', (d: Buffer) => child.output.push(d.toString()));
  child.stderr!.on('data', (d: Buffer) => child.output.push(d.toString()));
  return child;
}

export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Pids of processes whose working directory is under `dir` (job runners run in their job's folder). */
export function processesUnder(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/cwd`).startsWith(dir)) pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}
