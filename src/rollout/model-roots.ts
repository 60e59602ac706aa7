import { realpath } from 'node:fs/promises';
import { isAbsolute, normalize, relative, resolve } from 'node:path';
import { AppError, ErrorCode } from '../core/app-error';

/**
 * Where a tenant's `model.path` may point. Only folders inside the operator's `model_roots` (and, in a
 * job runner, the job's own folder) may be opened: anything else on the host — another tenant's
 * checkpoints, the database, `/etc` — is refused with one message that says nothing about whether the
 * path exists. The API checks the path as written ({@link modelPathAllowed}); the runner checks the real
 * path with links followed ({@link openableModelDir}), on the machine that opens it.
 */

/** Whether `child` is `root` or inside it (both absolute and normalised). */
function inside(root: string, child: string): boolean {
  const rel = relative(root, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** The path as written is absolute, has no `..` segments, and lies inside one of `roots`. */
export function modelPathAllowed(path: string, roots: readonly string[]): boolean {
  if (!isAbsolute(path) || path.includes('\0') || path.split(/[\\/]/).includes('..')) return false;
  const p = normalize(path);
  return roots.some((root) => inside(normalize(root), p));
}

/** The refusal, the same for a path outside the roots and for one that does not exist. */
export function modelPathRefusal(path: string, roots: readonly string[]): string {
  const where = roots.length === 0 ? 'this server lists no model folders (operator setting model_roots)' : `model folders live under ${roots.join(', ')}`;
  return `model.path ${JSON.stringify(path)} is not a model folder you may use: give a preset, job:<id> of one of your jobs, a Hugging Face repo as hf:Org/Name, or a folder where ${where}`;
}

/**
 * The real path of a model folder named by a tenant, when it lies inside one of `roots` after links are
 * followed; throws {@link modelPathRefusal} otherwise (also when it does not exist), with the API's code.
 */
export async function openableModelDir(path: string, roots: readonly string[]): Promise<string> {
  const refuse = () => new AppError(ErrorCode.HOST_ONLY, modelPathRefusal(path, roots), { field: 'model.path' });
  if (!modelPathAllowed(path, roots)) throw refuse();
  let real: string;
  try {
    real = await realpath(resolve(path));
  } catch {
    throw refuse();
  }
  for (const root of roots) {
    const realRoot = await realpath(root).catch(() => null);
    if (realRoot !== null && inside(realRoot, real)) return real;
  }
  throw refuse();
}
