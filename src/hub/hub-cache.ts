import { datasetInfo, listFiles, modelInfo } from '@huggingface/hub';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, mkdir, open, readdir, readFile, readlink, rename, rm, stat, symlink, truncate, unlink, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { AppError, ErrorCode } from '../core/app-error';
import { formatHubRef, isCommitSha, parseRepoFolderName, repoFolderName, type HubRef, type HubRepoType } from './hub-ref';
import type { HubSettings } from './hub-settings';

/**
 * A cache of Hugging Face Hub repos on this machine, laid out as huggingface_hub lays its own out (so a
 * user recognises it, and `hub_cache_dir` may even point at `~/.cache/huggingface/hub`):
 *
 * ```
 * <cacheDir>/models--Org--Name/
 *   refs/main                      the commit sha `main` resolved to
 *   blobs/<sha256 or git-sha1>     file contents, named by their checksum (the Hub's ETag)
 *   snapshots/<commit>/<file>      relative links into blobs/
 *   .opentinker/<commit>.json      the repo's file listing at that commit (ours; Python ignores it)
 * ```
 *
 * A revision is resolved to its commit once per pull, and what a commit holds never changes, so a repo
 * is downloaded once per commit and files shared between commits once at all. Only the files a caller
 * selects are fetched (for models: safetensors, config, generation config and tokenizer files).
 *
 * The Hub's listing is read with `@huggingface/hub` (`modelInfo`/`datasetInfo` for the commit,
 * `listFiles` for each file's size and checksum). Files are downloaded here with fetch instead of its
 * `downloadFileToCacheDir`, which neither resumes a partial file nor checks what it wrote: a blob is
 * fetched into `<blob>.incomplete` with an HTTP Range from what is already there, hashed (sha256 for LFS
 * files, git's blob sha1 for small ones, the same values the Hub sends as `X-Linked-Etag` / `ETag`) and
 * only then renamed into place; a mismatch deletes it. Concurrent downloads of one blob, by processes
 * of this machine or of others sharing the folder, take turns on `<blob>.lock`.
 */

/** One file of a repo at a commit, as the Hub lists it. */
export interface HubFile {
  path: string;
  size: number;
  /** The blob's name and checksum: sha256 for LFS files, git's blob sha1 otherwise. */
  oid: string;
  lfs: boolean;
}

export interface HubSnapshot {
  ref: HubRef;
  commit: string;
  /** `snapshots/<commit>`: the selected files, by their repo paths. */
  dir: string;
  /** The selected files. */
  files: HubFile[];
  /** Bytes fetched by this call (0: everything was cached). */
  downloadedBytes: number;
}

export interface ResolveOptions {
  /** Which of the repo's files to fetch; default {@link isModelFile}. */
  select?: (path: string) => boolean;
  /** The request field named in errors (`model.path`). */
  field?: string;
  log?: (line: string) => void;
  signal?: AbortSignal;
  /**
   * Ask the Hub for the commit even when the cache could answer (a commit sha whose listing it holds):
   * the answer, with this cache's token, is what proves that the caller may read the repo.
   */
  askHub?: boolean;
  /** Most bytes this call may download, and the error past it (checked before the first byte). */
  budget?: { bytes: number; exceeded: (neededBytes: number) => Error };
}

/** A repo in the cache, for `opentinker models list`. */
export interface CachedRepo {
  type: HubRepoType;
  repo: string;
  /** Branch or tag → commit, from `refs/`. */
  refs: Record<string, string>;
  snapshots: string[];
  /** Bytes of complete blobs. */
  bytes: number;
  /** Bytes of partial downloads (`*.incomplete`), resumed by the next pull. */
  partialBytes: number;
}

const MODEL_FILES = new Set([
  'config.json',
  'generation_config.json',
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'added_tokens.json',
  'vocab.json',
  'merges.txt',
  'tokenizer.model',
  'chat_template.jinja',
  'chat_template.json',
]);

/** The files a model folder needs: top-level safetensors (and their index), config and tokenizer files. */
export function isModelFile(path: string): boolean {
  if (path.includes('/')) return false;
  return MODEL_FILES.has(path) || path.endsWith('.safetensors') || path.endsWith('.safetensors.index.json');
}

/** A model folder the engine can load: config.json and top-level safetensors weights. */
function loadableModel(files: Array<Pick<HubFile, 'path'>>): boolean {
  return files.some((f) => f.path === 'config.json') && files.some((f) => f.path.endsWith('.safetensors'));
}

/** A lock whose holder has not touched it for this long is taken to be dead (a crashed process elsewhere). */
const STALE_LOCK_MS = 60_000;
const LOCK_TOUCH_MS = 5_000;
const LOCK_POLL_MS = 100;
const PROGRESS_EVERY_MS = 10_000;
const MAX_REDIRECTS = 5;
/** Tries of one Hub call or one file (each file try resumes where the last one stopped). */
const ATTEMPTS = 4;
const RETRY_DELAY_MS = 250;

export function gib(bytes: number): string {
  if (bytes < 1024 ** 2) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
}

/** `"abc"`, `W/"abc"` → `abc`. */
function unquoteEtag(value: string | null): string | null {
  if (value === null) return null;
  return value.replace(/^W\//, '').replace(/^"|"$/g, '').trim().toLowerCase() || null;
}

function statusOf(error: unknown): number | undefined {
  const e = error as { statusCode?: number; status?: number };
  return e?.statusCode ?? e?.status;
}

/** Writes through a temporary file and a rename, so a concurrent reader sees the old or the new file whole. */
async function writeAtomic(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  await writeFile(tmp, text);
  await rename(tmp, path);
}

/** A listed path that stays inside the snapshot folder (no absolute, empty, `.` or `..` segments). */
function safeRepoPath(path: string): boolean {
  return path.length > 0 && !path.includes('\\') && !path.includes('\0') && path.split('/').every((s) => s !== '' && s !== '.' && s !== '..');
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

export class HubCache {
  /** Refs resolved by this process: a job that loads its model twice (policy, reference) gets one commit. */
  private readonly resolved = new Map<string, string>();

  constructor(
    readonly settings: HubSettings,
    private readonly fetchImpl: typeof fetch = globalThis.fetch,
  ) {}

  repoDir(ref: Pick<HubRef, 'type' | 'repo'>): string {
    return join(this.settings.cacheDir, repoFolderName(ref));
  }

  /**
   * The snapshot folder of `ref` with the selected files present and verified, downloading what is
   * missing. Offline (`HF_HUB_OFFLINE`), only what the cache holds is used.
   */
  async resolve(ref: HubRef, options: ResolveOptions = {}): Promise<HubSnapshot> {
    const field = options.field ?? 'model.path';
    const select = options.select ?? isModelFile;
    const log = options.log ?? (() => undefined);
    const storage = this.repoDir(ref);
    const name = formatHubRef(ref);

    const commit = await this.commitOf(ref, field, options.askHub === true);
    let listing = await this.readListing(storage, commit);
    if (listing === null) {
      if (this.settings.offline) {
        // A snapshot another tool (huggingface_hub) wrote has no listing of ours: use its files as they are.
        const adopted = await this.adoptForeignSnapshot(ref, storage, commit, select);
        if (adopted) return adopted;
        throw this.notCached(name, field);
      }
      listing = await this.listRepo(ref, commit, field);
      await writeAtomic(join(storage, '.opentinker', `${commit}.json`), JSON.stringify({ type: ref.type, repo: ref.repo, commit, files: listing }, null, 1));
    }
    const files = listing.filter((f) => select(f.path));
    if (ref.type === 'model') this.checkModelFiles(name, commit, listing, files, field);

    const missing: HubFile[] = [];
    for (const f of files) if (!(await exists(join(storage, 'blobs', f.oid)))) missing.push(f);
    let downloadedBytes = 0;
    if (missing.length > 0) {
      if (this.settings.offline) throw this.notCached(name, field);
      this.checkSize(name, files, field);
      const total = missing.reduce((a, f) => a + f.size, 0);
      if (options.budget && total > options.budget.bytes) throw options.budget.exceeded(total);
      log(`hub: fetching ${missing.length} file(s) of ${name} at ${commit.slice(0, 12)} (${gib(total)}) from ${this.settings.endpoint} into ${storage}`);
      for (const f of missing) downloadedBytes += await this.fetchBlob(ref, commit, f, field, log, options.signal);
    }
    const dir = join(storage, 'snapshots', commit);
    for (const f of files) await this.link(storage, commit, f);
    if (downloadedBytes === 0) log(`hub: ${name} at ${commit.slice(0, 12)} from the cache (${dir})`);
    return { ref, commit, dir, files, downloadedBytes };
  }

  /**
   * The snapshot of `ref` when this cache holds every selected file of it (for a model: config.json and
   * safetensors weights among them), else null. It never calls the Hub and remembers no ref between calls,
   * so what another process puts in the cache (`opentinker models pull`, a job's worker) shows at once:
   * for a server that answers only from what its operator cached.
   */
  async cachedSnapshot(ref: HubRef, select: (path: string) => boolean = isModelFile): Promise<HubSnapshot | null> {
    const storage = this.repoDir(ref);
    const commit = await this.recordedCommit(ref);
    if (commit === null) return null;
    const listing = await this.readListing(storage, commit);
    if (listing === null) return this.adoptForeignSnapshot(ref, storage, commit, select);
    const files = listing.filter((f) => select(f.path));
    if (ref.type === 'model' && !loadableModel(files)) return null;
    const dir = join(storage, 'snapshots', commit);
    // stat follows the snapshot's links: a file counts once its blob is there too.
    const present = async (path: string) => (await stat(path).catch(() => null))?.isFile() === true;
    for (const f of files) if (!(await present(join(dir, f.path)))) return null;
    return { ref, commit, dir, files, downloadedBytes: 0 };
  }

  /** The commit a ref names by this cache alone: a commit sha as it is, a branch or tag through `refs/`; null when not recorded. */
  private async recordedCommit(ref: HubRef): Promise<string | null> {
    const revision = ref.revision ?? 'main';
    if (isCommitSha(revision)) return revision;
    const recorded = await readFile(join(this.repoDir(ref), 'refs', revision), 'utf8').catch(() => null);
    return recorded !== null && isCommitSha(recorded.trim()) ? recorded.trim() : null;
  }

  /**
   * Marks a snapshot as the operator's to share (`opentinker models pull` on this machine): every tenant
   * of a server using this cache may then use it ({@link isShared}). A marker file beside the listing,
   * since the operator's commands work on the cache folder without the server's database.
   */
  async markShared(ref: Pick<HubRef, 'type' | 'repo'>, commit: string): Promise<void> {
    await writeAtomic(join(this.repoDir(ref), '.opentinker', `${commit}.shared`), 'pulled by the operator: every tenant may use this snapshot\n');
  }

  /** Whether the operator shared this snapshot of this cache ({@link markShared}). */
  async isShared(ref: Pick<HubRef, 'type' | 'repo'>, commit: string): Promise<boolean> {
    return isCommitSha(commit) && (await exists(join(this.repoDir(ref), '.opentinker', `${commit}.shared`)));
  }

  /** The repo's files at `commit` as the Hub listed them (empty before a resolve of that commit). */
  async listing(ref: Pick<HubRef, 'type' | 'repo'>, commit: string): Promise<HubFile[]> {
    return (await this.readListing(this.repoDir(ref), commit)) ?? [];
  }

  /** The commit a ref names: the Hub's answer online (recorded under refs/), refs/ offline. */
  private async commitOf(ref: HubRef, field: string, askHub: boolean): Promise<string> {
    const revision = ref.revision ?? 'main';
    const storage = this.repoDir(ref);
    const key = `${ref.type}:${ref.repo}@${revision}`;
    const known = this.resolved.get(key);
    if (known) return known;
    let commit: string;
    if (this.settings.offline) {
      const recorded = await this.recordedCommit(ref);
      if (recorded === null) throw this.notCached(formatHubRef(ref), field);
      commit = recorded;
    } else if (!askHub && isCommitSha(revision) && (await exists(join(storage, '.opentinker', `${revision}.json`)))) {
      commit = revision; // a commit's files never change: nothing to ask
    } else {
      commit = await this.hubCall(ref, field, async (hub) => {
        const info =
          ref.type === 'model'
            ? await modelInfo({ name: ref.repo, revision, additionalFields: ['sha'], ...hub })
            : await datasetInfo({ name: ref.repo, revision, additionalFields: ['sha'], ...hub });
        const sha = (info as { sha?: unknown }).sha;
        if (typeof sha !== 'string' || !isCommitSha(sha)) {
          throw new AppError(ErrorCode.MODEL_UNAVAILABLE, `${field} ${formatHubRef(ref)}: the Hub at ${this.settings.endpoint} gave no commit sha for revision ${revision}`, {
            field,
          });
        }
        return sha;
      });
      if (revision !== commit) await writeAtomic(join(storage, 'refs', revision), commit);
    }
    this.resolved.set(key, commit);
    return commit;
  }

  private async listRepo(ref: HubRef, commit: string, field: string): Promise<HubFile[]> {
    return this.hubCall(ref, field, async (hub) => {
      const out: HubFile[] = [];
      for await (const entry of listFiles({ repo: { type: ref.type, name: ref.repo }, revision: commit, recursive: true, ...hub })) {
        if (entry.type !== 'file' || !safeRepoPath(entry.path)) continue;
        const lfs = entry.lfs !== undefined && entry.lfs !== null;
        const oid = ((lfs ? entry.lfs!.oid : entry.oid) ?? '').toLowerCase();
        if (!/^[0-9a-f]{40}$|^[0-9a-f]{64}$/.test(oid)) {
          throw new AppError(ErrorCode.MODEL_UNAVAILABLE, `${field} ${formatHubRef(ref)}: the Hub listed ${entry.path} with no usable checksum`, { field });
        }
        out.push({ path: entry.path, size: lfs ? entry.lfs!.size : entry.size, oid, lfs });
      }
      return out;
    });
  }

  /** Credentials and endpoint for `@huggingface/hub`, and its errors turned into ours. */
  private async hubCall<T>(ref: HubRef, field: string, call: (hub: { hubUrl: string; fetch: typeof fetch }) => Promise<T>): Promise<T> {
    // The token goes in a header here rather than as the library's accessToken, which refuses tokens
    // without the hub's `hf_` prefix (a mirror's own tokens).
    const token = this.settings.token;
    const authed: typeof fetch = (input, init) => {
      if (!token) return this.fetchImpl(input, init);
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${token}`);
      return this.fetchImpl(input, { ...init, headers });
    };
    for (let attempt = 1; ; attempt++) {
      try {
        return await call({ hubUrl: this.settings.endpoint, fetch: authed });
      } catch (error) {
        if (error instanceof AppError) throw error;
        const status = statusOf(error);
        // A dropped connection (no HTTP status) or a 5xx is tried again; a refusal is final.
        if (attempt < ATTEMPTS && (status === undefined || status >= 500)) {
          await new Promise((r) => setTimeout(r, RETRY_DELAY_MS * attempt));
          continue;
        }
        throw this.hubError(ref, field, error, status);
      }
    }
  }

  private hubError(ref: HubRef, field: string, error: unknown, status: number | undefined): AppError {
    const name = formatHubRef(ref);
    {
      if (status === 401 || status === 403) {
        return new AppError(
          ErrorCode.MODEL_NOT_FOUND,
          `${field} ${name}: the Hub refused access (HTTP ${status}); a gated or private repo needs HF_TOKEN set where the job runs${this.settings.token ? ' (the token set was refused)' : ''}`,
          { field },
        );
      }
      if (status === 404) {
        return new AppError(ErrorCode.MODEL_NOT_FOUND, `${field} ${name}: no such ${ref.type} repo or revision on ${this.settings.endpoint}`, { field });
      }
      return new AppError(
        ErrorCode.MODEL_UNAVAILABLE,
        `${field} ${name}: cannot reach the Hub at ${this.settings.endpoint} (${(error as Error).message}); set HF_ENDPOINT for a mirror, or HF_HUB_OFFLINE=1 to use the cache`,
        { field, cause: error },
      );
    }
  }

  private checkModelFiles(name: string, commit: string, listing: HubFile[], files: HubFile[], field: string): void {
    if (!loadableModel(files)) {
      const others = listing
        .filter((f) => /\.(bin|pt|pth|gguf|h5|msgpack|onnx)$/.test(f.path))
        .map((f) => f.path)
        .slice(0, 4);
      throw new AppError(
        ErrorCode.MODEL_LOAD_FAILED,
        `${field} ${name} at ${commit.slice(0, 12)} is not a loadable model: it needs config.json and top-level .safetensors weights${others.length ? ` (it has ${others.join(', ')})` : ''}`,
        { field },
      );
    }
  }

  private checkSize(name: string, files: HubFile[], field: string): void {
    const total = files.reduce((a, f) => a + f.size, 0);
    const max = this.settings.maxDownloadBytes;
    if (max === 0) {
      throw new AppError(
        ErrorCode.LIMIT_EXCEEDED,
        `${field} ${name} is not in this machine's cache and Hub downloads are off here (setting hub_max_download_bytes=0, OPENTINKER_HUB_MAX_DOWNLOAD_BYTES)`,
        { field },
      );
    }
    if (total > max) {
      throw new AppError(
        ErrorCode.LIMIT_EXCEEDED,
        `${field} ${name} is ${gib(total)} (${total} bytes in ${files.length} files), more than this server allows to download (setting hub_max_download_bytes=${max}, ${gib(max)}; OPENTINKER_HUB_MAX_DOWNLOAD_BYTES)`,
        { field, details: { bytes: total, limit: max } },
      );
    }
  }

  /** The error for a repo this machine does not hold while offline (HF_HUB_OFFLINE). */
  notCached(name: string, field: string): AppError {
    return new AppError(
      ErrorCode.MODEL_NOT_FOUND,
      `${field} ${name} is not in the Hub cache at ${this.settings.cacheDir} and this machine is offline (HF_HUB_OFFLINE): run \`opentinker models pull ${name.slice(3)}\` on it while online, or unset HF_HUB_OFFLINE`,
      { field },
    );
  }

  private async readListing(storage: string, commit: string): Promise<HubFile[] | null> {
    const text = await readFile(join(storage, '.opentinker', `${commit}.json`), 'utf8').catch(() => null);
    if (text === null) return null;
    try {
      const files = (JSON.parse(text) as { files?: HubFile[] }).files;
      return Array.isArray(files) ? files : null;
    } catch {
      return null; // rewritten from the Hub's listing
    }
  }

  /** A snapshot folder without our listing (written by huggingface_hub): its selected files as they are. */
  private async adoptForeignSnapshot(ref: HubRef, storage: string, commit: string, select: (p: string) => boolean): Promise<HubSnapshot | null> {
    const dir = join(storage, 'snapshots', commit);
    const names = await readdir(dir).catch(() => null);
    if (names === null) return null;
    const files: HubFile[] = [];
    for (const n of names.filter(select)) {
      const s = await stat(join(dir, n)).catch(() => null);
      if (s?.isFile()) files.push({ path: n, size: s.size, oid: '', lfs: false });
    }
    if (ref.type === 'model' && !loadableModel(files)) return null;
    return { ref, commit, dir, files, downloadedBytes: 0 };
  }

  /** `snapshots/<commit>/<path>` → `../../blobs/<oid>` (relative, as huggingface_hub links). */
  private async link(storage: string, commit: string, file: HubFile): Promise<void> {
    const pointer = join(storage, 'snapshots', commit, file.path);
    const target = relative(dirname(pointer), join(storage, 'blobs', file.oid));
    const current = await readlink(pointer).catch(() => null);
    if (current === target) return;
    await mkdir(dirname(pointer), { recursive: true });
    if (current !== null || (await exists(pointer))) await rm(pointer, { force: true });
    try {
      await symlink(target, pointer);
    } catch (error) {
      // Another process linked it at the same moment: fine when it points at the same blob.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || (await readlink(pointer).catch(() => null)) !== target) throw error;
    }
  }

  /** Downloads one blob under its lock; returns the bytes fetched (0 when another process fetched it). */
  private async fetchBlob(ref: HubRef, commit: string, file: HubFile, field: string, log: (line: string) => void, signal?: AbortSignal): Promise<number> {
    const blobs = join(this.repoDir(ref), 'blobs');
    const blob = join(blobs, file.oid);
    await mkdir(blobs, { recursive: true });
    const release = await this.lock(`${blob}.lock`, () => exists(blob), signal);
    if (release === null) return 0;
    try {
      let fetched = 0;
      for (let attempt = 1; ; attempt++) {
        try {
          await this.download(ref, commit, file, blob, field, log, signal, (n) => (fetched += n));
          return fetched;
        } catch (error) {
          const retry = error instanceof AppError && (error.details as { retryable?: boolean } | undefined)?.retryable === true;
          if (!retry || attempt >= ATTEMPTS || signal?.aborted) throw error;
          log(`hub: ${file.path}: ${(error.details as { why: string }).why}; trying again (${attempt + 1}/${ATTEMPTS})`);
          await new Promise((r) => setTimeout(r, RETRY_DELAY_MS * attempt));
        }
      }
    } finally {
      await release();
    }
  }

  /**
   * Takes `path` (a file holding `host pid`, touched while held). Returns null when `done()` turns true
   * while waiting (another process finished the work).
   */
  private async lock(path: string, done: () => Promise<boolean>, signal?: AbortSignal): Promise<(() => Promise<void>) | null> {
    for (;;) {
      if (await done()) return null;
      signal?.throwIfAborted();
      try {
        const handle = await open(path, 'wx');
        await handle.writeFile(`${hostname()} ${process.pid}\n`);
        await handle.close();
        const timer = setInterval(() => void utimes(path, new Date(), new Date()).catch(() => undefined), LOCK_TOUCH_MS);
        timer.unref();
        return async () => {
          clearInterval(timer);
          await unlink(path).catch(() => undefined);
        };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      if (await this.staleLock(path)) {
        await unlink(path).catch(() => undefined);
        continue;
      }
      await new Promise((r) => setTimeout(r, LOCK_POLL_MS));
    }
  }

  private async staleLock(path: string): Promise<boolean> {
    const [text, info] = await Promise.all([readFile(path, 'utf8').catch(() => null), stat(path).catch(() => null)]);
    if (text === null || info === null) return false; // just released or being written: look again
    const [host, pid] = text.trim().split(' ');
    if (host === hostname() && Number(pid) > 0) {
      try {
        process.kill(Number(pid), 0);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ESRCH') return true;
      }
    }
    return Date.now() - info.mtimeMs > STALE_LOCK_MS;
  }

  private fileUrl(ref: HubRef, commit: string, path: string): string {
    const repoPath = `${ref.type === 'dataset' ? 'datasets/' : ''}${ref.repo}`;
    return `${this.settings.endpoint}/${repoPath}/resolve/${commit}/${path.split('/').map(encodeURIComponent).join('/')}`;
  }

  /**
   * GET with redirects followed by hand: the Hub's `302` to its CDN carries `X-Linked-Etag` (the LFS
   * file's sha256), and the token must not travel to another host.
   */
  private async get(url: string, from: number, signal?: AbortSignal): Promise<{ response: Response; linkedEtag: string | null }> {
    const origin = new URL(this.settings.endpoint).origin;
    let linkedEtag: string | null = null;
    let current = url;
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      const headers: Record<string, string> = { 'accept-encoding': 'identity', 'user-agent': 'opentinker' };
      if (from > 0) headers.range = `bytes=${from}-`;
      if (this.settings.token && new URL(current).origin === origin) headers.authorization = `Bearer ${this.settings.token}`;
      const response = await this.fetchImpl(current, { headers, redirect: 'manual', signal });
      linkedEtag ??= unquoteEtag(response.headers.get('x-linked-etag'));
      if (response.status >= 300 && response.status < 400 && response.headers.get('location')) {
        await response.body?.cancel();
        current = new URL(response.headers.get('location')!, current).toString();
        continue;
      }
      return { response, linkedEtag };
    }
    throw new Error(`more than ${MAX_REDIRECTS} redirects from ${url}`);
  }

  /**
   * One try at a blob: resumes `<blob>.incomplete`, verifies, renames. Bytes written are reported to
   * `progress` as they arrive (so those of a failed try count too).
   */
  private async download(
    ref: HubRef,
    commit: string,
    file: HubFile,
    blob: string,
    field: string,
    log: (line: string) => void,
    signal: AbortSignal | undefined,
    progress: (bytes: number) => void,
  ): Promise<void> {
    const name = formatHubRef(ref);
    const partial = `${blob}.incomplete`;
    let have = (await stat(partial).catch(() => null))?.size ?? 0;
    if (have > file.size) {
      await truncate(partial, 0);
      have = 0;
    }
    const fail = (why: string, cause?: unknown, retryable = true) =>
      new AppError(ErrorCode.MODEL_UNAVAILABLE, `${field} ${name}: downloading ${file.path} failed: ${why}; the next pull resumes it`, {
        field,
        cause,
        details: { retryable, why },
      });
    if (have < file.size || file.size === 0) {
      const url = this.fileUrl(ref, commit, file.path);
      let got: Awaited<ReturnType<HubCache['get']>>;
      try {
        got = await this.get(url, have, signal);
      } catch (error) {
        throw fail((error as Error).message, error);
      }
      const { response, linkedEtag } = got;
      const headerEtag = linkedEtag ?? unquoteEtag(response.headers.get('etag'));
      // A checksum-shaped ETag that is not the listed one: the server holds other bytes than it listed.
      if (headerEtag !== null && headerEtag.length === file.oid.length && /^[0-9a-f]+$/.test(headerEtag) && headerEtag !== file.oid) {
        await response.body?.cancel();
        throw this.mismatch(name, file, field, `the Hub's ETag is ${headerEtag}, its listing says ${file.oid}`);
      }
      let flags: 'a' | 'w';
      if (response.status === 206) {
        const start = /^bytes (\d+)-/.exec(response.headers.get('content-range') ?? '');
        if (!start || Number(start[1]) !== have) {
          await response.body?.cancel();
          await truncate(partial, 0); // the next try starts over
          throw fail(`the server resumed at ${start?.[1] ?? 'an unknown offset'} instead of byte ${have}`);
        }
        flags = 'a';
        log(`hub: resuming ${file.path} at ${gib(have)} of ${gib(file.size)}`);
      } else if (response.status === 200) {
        flags = 'w';
        have = 0; // the server sent the whole file
      } else if (response.status === 416 && have === file.size) {
        await response.body?.cancel();
        flags = 'a';
      } else {
        await response.body?.cancel();
        throw fail(`HTTP ${response.status} from ${new URL(response.url || url).host}`, undefined, response.status >= 500 || response.status === 429);
      }
      if (response.status !== 416) {
        log(`hub: ${file.path} (${gib(file.size)})`);
        const handle = await open(partial, flags);
        let written = have;
        let lastReport = Date.now();
        try {
          if (!response.body) throw new Error('empty response');
          for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
            written += chunk.byteLength;
            if (written > file.size) throw this.mismatch(name, file, field, `the server sent more than the listed ${file.size} bytes`);
            await handle.write(chunk);
            progress(chunk.byteLength);
            if (Date.now() - lastReport > PROGRESS_EVERY_MS) {
              lastReport = Date.now();
              log(`hub: ${file.path} ${((100 * written) / file.size).toFixed(0)}% (${gib(written)} of ${gib(file.size)})`);
            }
          }
        } catch (error) {
          if (error instanceof AppError && error.code === ErrorCode.MODEL_LOAD_FAILED) {
            await handle.close();
            await rm(partial, { force: true });
            throw error;
          }
          throw fail((error as Error).message, error);
        } finally {
          await handle.close().catch(() => undefined);
        }
        if (written < file.size) throw fail(`the connection closed after ${written} of ${file.size} bytes`);
      }
    }
    const digest = await this.checksum(partial, file);
    if (digest !== file.oid) {
      await rm(partial, { force: true });
      throw this.mismatch(name, file, field, `its ${file.lfs ? 'sha256' : 'git sha1'} is ${digest}, the Hub lists ${file.oid}`);
    }
    await rename(partial, blob);
  }

  private mismatch(name: string, file: HubFile, field: string, why: string): AppError {
    return new AppError(ErrorCode.MODEL_LOAD_FAILED, `${field} ${name}: ${file.path} failed its checksum (${why}); the file was not kept`, { field });
  }

  /** sha256 of the contents for LFS files; git's blob id (`sha1("blob <size>\0" + contents)`) otherwise. */
  private async checksum(path: string, file: HubFile): Promise<string> {
    const hash = createHash(file.lfs ? 'sha256' : 'sha1');
    if (!file.lfs) hash.update(`blob ${(await stat(path)).size}\0`);
    for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
    return hash.digest('hex');
  }

  /** Every repo in the cache with its refs, snapshots and size. */
  async list(): Promise<CachedRepo[]> {
    const names = await readdir(this.settings.cacheDir).catch(() => [] as string[]);
    const out: CachedRepo[] = [];
    for (const n of names.sort()) {
      const id = parseRepoFolderName(n);
      if (!id) continue;
      const storage = join(this.settings.cacheDir, n);
      const refs: Record<string, string> = {};
      const walk = async (dir: string, prefix: string): Promise<void> => {
        for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
          if (e.isDirectory()) await walk(join(dir, e.name), `${prefix}${e.name}/`);
          else refs[`${prefix}${e.name}`] = (await readFile(join(dir, e.name), 'utf8')).trim();
        }
      };
      await walk(join(storage, 'refs'), '');
      let bytes = 0;
      let partialBytes = 0;
      for (const b of await readdir(join(storage, 'blobs')).catch(() => [] as string[])) {
        const size = (await stat(join(storage, 'blobs', b)).catch(() => null))?.size ?? 0;
        if (b.endsWith('.incomplete')) partialBytes += size;
        else if (!b.endsWith('.lock')) bytes += size;
      }
      const snapshots = await readdir(join(storage, 'snapshots')).catch(() => [] as string[]);
      out.push({ ...id, refs, snapshots: snapshots.sort(), bytes, partialBytes });
    }
    return out;
  }

  /** Deletes a repo's folder (all its revisions). False when it was not cached. Refused while a download runs. */
  async remove(ref: Pick<HubRef, 'type' | 'repo'>): Promise<boolean> {
    const storage = this.repoDir(ref);
    if (!(await exists(storage))) return false;
    for (const b of await readdir(join(storage, 'blobs')).catch(() => [] as string[])) {
      if (b.endsWith('.lock') && !(await this.staleLock(join(storage, 'blobs', b)))) {
        throw new AppError(ErrorCode.CONFLICT, `${formatHubRef({ ...ref, revision: null })} is being downloaded (${b}); remove it when that ends`);
      }
    }
    await rm(storage, { recursive: true, force: true });
    return true;
  }
}
