import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Where checkpoints live and which are complete, as plain file-system facts (no engine, so the API
 * process can use it): `<workDir>/checkpoints/step-<n>/`, written as `step-<n>.tmp/` and renamed, so
 * only `step-<digits>` folders are complete.
 */
const STEP_DIR = /^step-(0|[1-9]\d{0,14})$/;

export const checkpointsDir = (workDir: string) => join(workDir, 'checkpoints');

/** A job's checkpoints folder, from the jobs folder (`<home>/jobs`) and its id. */
export const jobCheckpointsDir = (jobsDir: string, jobId: string) => checkpointsDir(join(jobsDir, jobId, 'work'));

/** Steps of the complete checkpoints in a checkpoints folder, ascending (no folder: none). */
export async function checkpointSteps(dir: string): Promise<number[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return [];
    throw error;
  }
  const steps: number[] = [];
  for (const name of names) {
    const m = STEP_DIR.exec(name);
    if (!m) continue;
    const st = await lstat(join(dir, name)).catch(() => null);
    if (st?.isDirectory()) steps.push(Number(m[1]));
  }
  return steps.sort((a, b) => a - b);
}
