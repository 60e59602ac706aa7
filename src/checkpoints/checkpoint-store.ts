import { lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { checkpointSteps, jobCheckpointsDir } from '../rollout/checkpoint-folders';

/**
 * Reading a job's checkpoints as the train runner leaves them (contracts.md):
 * `<jobsDir>/<id>/work/checkpoints/step-<n>/` with `model/` (a Hugging Face folder), `adapter/` (LoRA
 * only), `optimizer.safetensors` and `trainer_state.json`. A folder is complete once renamed from
 * `step-<n>.tmp/`, so only `step-<digits>` names count. Pure file system, no Nest: the API and the CLI
 * tests both use it.
 */

/** One file of a checkpoint, relative to its folder (`/` separated). */
export interface CheckpointFile {
  path: string;
  size: number;
}

export interface CheckpointInfo {
  step: number;
  /** Absolute folder. */
  dir: string;
  /** From `trainer_state.json` (`created`) when present, else the folder's modification time (ms since epoch). */
  createdAt: number;
  sizeBytes: number;
  hasModel: boolean;
  hasAdapter: boolean;
  files: CheckpointFile[];
}

/** What `:step` may be in a URL or a model name: a step number or `latest`; nothing else reaches the file system. */
export const STEP_REF = /^(?:latest|0|[1-9]\d{0,14})$/;

/** The complete checkpoints' step numbers, ascending. */
export function listCheckpointSteps(jobsDir: string, jobId: string): Promise<number[]> {
  return checkpointSteps(jobCheckpointsDir(jobsDir, jobId));
}

/** The step `ref` names (`latest` or a number) if that checkpoint exists, else null. */
export async function resolveCheckpointStep(jobsDir: string, jobId: string, ref: string): Promise<number | null> {
  if (!STEP_REF.test(ref)) return null;
  const steps = await listCheckpointSteps(jobsDir, jobId);
  if (ref === 'latest') return steps.length ? steps[steps.length - 1] : null;
  const step = Number(ref);
  return steps.includes(step) ? step : null;
}

/**
 * Every regular file under `dir`, sorted by path. Symbolic links and other special files are skipped
 * (never followed), so a checkpoint cannot expose anything outside its folder.
 */
export async function walkFiles(dir: string): Promise<CheckpointFile[]> {
  const out: CheckpointFile[] = [];
  const visit = async (abs: string, rel: string): Promise<void> => {
    const entries = await readdir(abs, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const childRel = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) await visit(join(abs, e.name), childRel);
      else if (e.isFile()) out.push({ path: childRel, size: (await lstat(join(abs, e.name))).size });
    }
  };
  await visit(dir, '');
  return out;
}

/** A checkpoint's description; null when it does not exist (or was pruned meanwhile). */
export async function describeCheckpoint(jobsDir: string, jobId: string, step: number): Promise<CheckpointInfo | null> {
  const dir = join(jobCheckpointsDir(jobsDir, jobId), `step-${step}`);
  const st = await lstat(dir).catch(() => null);
  if (!st?.isDirectory()) return null;
  let files: CheckpointFile[];
  try {
    files = await walkFiles(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  return {
    step,
    dir,
    createdAt: (await createdFromState(join(dir, 'trainer_state.json'))) ?? st.mtimeMs,
    sizeBytes: files.reduce((a, f) => a + f.size, 0),
    hasModel: files.some((f) => f.path === 'model/config.json'),
    hasAdapter: files.some((f) => f.path.startsWith('adapter/')),
    files,
  };
}

/** All complete checkpoints of a job, ascending by step. */
export async function listCheckpoints(jobsDir: string, jobId: string): Promise<CheckpointInfo[]> {
  const out: CheckpointInfo[] = [];
  for (const step of await listCheckpointSteps(jobsDir, jobId)) {
    const info = await describeCheckpoint(jobsDir, jobId, step);
    if (info) out.push(info);
  }
  return out;
}

async function createdFromState(path: string): Promise<number | null> {
  try {
    const state = JSON.parse(await readFile(path, 'utf8')) as { created?: unknown };
    const c = state.created;
    const ms = typeof c === 'number' ? (c < 1e12 ? c * 1000 : c) : typeof c === 'string' ? Date.parse(c) : NaN;
    return Number.isFinite(ms) ? ms : null;
  } catch {
    return null;
  }
}
