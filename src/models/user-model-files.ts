import { createHash } from 'node:crypto';
import { join } from 'node:path';

/**
 * Where uploaded model folders live and how `model.path` names them: `model:<id>` is
 * `<home>/models/<id>/`, a Hugging Face folder. Pure, so the job runner resolves names without the API.
 */

export const USER_MODEL_PREFIX = 'model:';

// Ids come from specs and URLs; only the uuid shape the API mints may reach the file system.
const USER_MODEL_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function isUserModelId(id: string): boolean {
  return USER_MODEL_ID.test(id);
}

/** `model:<id>` for an id. */
export function userModelName(id: string): string {
  return `${USER_MODEL_PREFIX}${id}`;
}

/** Whether a name is meant as an uploaded model (`model:…`), well-formed or not. */
export function isUserModelRef(name: string): boolean {
  return name.startsWith(USER_MODEL_PREFIX);
}

/** The id of `model:<id>`, or null when the rest is not an id the API mints. */
export function parseUserModelRef(name: string): string | null {
  if (!isUserModelRef(name)) return null;
  const id = name.slice(USER_MODEL_PREFIX.length).toLowerCase();
  return isUserModelId(id) ? id : null;
}

/** `<home>/models`. */
export function userModelsDir(home: string): string {
  return join(home, 'models');
}

/** The folder of model `id`: `<home>/models/<id>`. */
export function userModelDir(home: string, id: string): string {
  if (!isUserModelId(id)) throw new Error(`invalid model id "${id}" (expected a uuid)`);
  return join(userModelsDir(home), id);
}

/**
 * A model folder's content hash: sha256 over `<path>\0<size>\0<sha256 of the file>\n` of its files,
 * sorted by path. The server computes it while it receives an upload; the CLI computes it from the
 * local folder to find an upload of the same content.
 *
 * @example
 * ```ts
 * modelContentHash([{ path: 'config.json', size: 2, sha256: '44136f…' }]); // 'a3c1…'
 * ```
 */
export function modelContentHash(files: ReadonlyArray<{ path: string; size: number; sha256: string }>): string {
  const hash = createHash('sha256');
  for (const f of [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) hash.update(`${f.path}\0${f.size}\0${f.sha256}\n`);
  return hash.digest('hex');
}
