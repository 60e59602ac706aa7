import { AppError, ErrorCode } from '../core/app-error';

/**
 * A Hugging Face Hub repository named by a tenant: `hf:Org/Name` (the default branch) or
 * `hf:Org/Name@revision` (a branch, a tag or a commit sha), as `model.path` and the `models` commands
 * take it. The same rules as huggingface_hub's `validate_repo_id`, so no name can climb out of the cache
 * folder or reach another URL path of the Hub.
 */
export type HubRepoType = 'model' | 'dataset';

export interface HubRef {
  type: HubRepoType;
  /** `Org/Name` (or a bare `Name`). */
  repo: string;
  /** A branch, tag or commit sha; null: the repo's default branch (`main`). */
  revision: string | null;
}

export const HUB_PREFIX = 'hf:';

const NAME_PART = /^[A-Za-z0-9_.-]{1,96}$/;
const COMMIT_SHA = /^[0-9a-f]{40}$/;

/** Whether a `model.path` names a Hub repo (`hf:…`) rather than a folder or a job's checkpoint. */
export function isHubRef(path: string): boolean {
  return path.startsWith(HUB_PREFIX);
}

export function isCommitSha(revision: string): boolean {
  return COMMIT_SHA.test(revision);
}

/** Why `repo` is not a Hub repo id, or null when it is one. */
export function repoIdProblem(repo: string): string | null {
  const parts = repo.split('/');
  if (parts.length > 2) return 'a repo id is Org/Name (one slash at most)';
  for (const part of parts) {
    if (!NAME_PART.test(part)) return 'names use letters, digits, "-", "_" and "." (96 at most)';
    if (part.startsWith('.') || part.startsWith('-') || part.endsWith('.') || part.endsWith('-')) return 'a name may not start or end with "." or "-"';
    if (part.includes('--') || part.includes('..')) return 'a name may not contain "--" or ".."';
  }
  if (repo.endsWith('.git')) return 'a repo id may not end with .git';
  return null;
}

/** Why `revision` is not a usable revision, or null. Branches may hold slashes (`refs/pr/1`), never `..`. */
export function revisionProblem(revision: string): string | null {
  if (revision.length === 0 || revision.length > 128) return 'a revision has 1 to 128 characters';
  if (!/^[A-Za-z0-9_.\-/]+$/.test(revision)) return 'a revision uses letters, digits, "-", "_", "." and "/"';
  if (revision.startsWith('/') || revision.endsWith('/') || revision.split('/').some((s) => s === '' || s === '.' || s === '..')) {
    return 'a revision may not have empty, "." or ".." segments';
  }
  return null;
}

/**
 * Parses `hf:Org/Name[@revision]`, or `hf:datasets/Org/Name[@revision]` for a dataset repo (the `hf:`
 * prefix is optional here: the `models` commands take a bare id). Throws a validation error naming `field`.
 */
export function parseHubRef(text: string, options: { type?: HubRepoType; field?: string } = {}): HubRef {
  const field = options.field ?? 'model.path';
  let body = text.startsWith(HUB_PREFIX) ? text.slice(HUB_PREFIX.length) : text;
  let type = options.type ?? 'model';
  if (body.startsWith('datasets/')) {
    body = body.slice('datasets/'.length);
    type = 'dataset';
  }
  const at = body.indexOf('@');
  const repo = at === -1 ? body : body.slice(0, at);
  const revision = at === -1 ? null : body.slice(at + 1);
  const invalid = (why: string) =>
    new AppError(ErrorCode.VALIDATION, `${field} ${JSON.stringify(text)} is not a Hugging Face repo: ${why} (hf:Org/Name or hf:Org/Name@revision)`, { field });
  const repoWhy = repoIdProblem(repo);
  if (repoWhy) throw invalid(repoWhy);
  if (revision !== null) {
    const revWhy = revisionProblem(revision);
    if (revWhy) throw invalid(revWhy);
  }
  return { type, repo, revision };
}

/** `hf:Org/Name@revision` (no `@` for the default branch). */
export function formatHubRef(ref: HubRef): string {
  return `${HUB_PREFIX}${ref.type === 'dataset' ? 'datasets/' : ''}${ref.repo}${ref.revision === null ? '' : `@${ref.revision}`}`;
}

/** The repo's folder in the cache, as huggingface_hub names it: `models--Org--Name`. */
export function repoFolderName(ref: Pick<HubRef, 'type' | 'repo'>): string {
  return `${ref.type}s--${ref.repo.split('/').join('--')}`;
}

/** The inverse of {@link repoFolderName}, or null for a folder that is not a repo's. */
export function parseRepoFolderName(name: string): Pick<HubRef, 'type' | 'repo'> | null {
  const m = /^(models|datasets)--(.+)$/.exec(name);
  if (!m) return null;
  const repo = m[2].split('--').join('/');
  if (repoIdProblem(repo)) return null;
  return { type: m[1] === 'models' ? 'model' : 'dataset', repo };
}

/**
 * What a seed command's `model_path=` / `tokenizer_path=` means: OpenTinker's scripts pass a Hub repo id
 * (`Qwen/Qwen2.5-1.5B`), which becomes `hf:Qwen/Qwen2.5-1.5B` unless a folder of that name exists where
 * the command runs. Anything else (absolute paths, `job:` refs, `hf:` refs) is left as it is.
 */
export function seedModelPath(value: unknown, folderExists: (path: string) => boolean): unknown {
  if (typeof value !== 'string' || !/^[^/:@]+\/[^/:@]+(@[^:]+)?$/.test(value) || value.startsWith('.')) return value;
  const repo = value.split('@')[0];
  if (repoIdProblem(repo) !== null || folderExists(value)) return value;
  return `${HUB_PREFIX}${value}`;
}
