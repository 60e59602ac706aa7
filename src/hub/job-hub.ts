import { z } from 'zod';
import { AppError, ErrorCode } from '../core/app-error';
import { hubSnapshotKey, mayUseHubSnapshot, operatorServes, type HubAccessKind, type HubUse } from './hub-access';
import { gib, HubCache, type HubSnapshot } from './hub-cache';
import { formatHubRef, isCommitSha, type HubRef } from './hub-ref';
import type { HubSettings } from './hub-settings';

/**
 * What the worker tells a job runner about its owner's access to the Hub: the records that let the
 * owner use cached snapshots (`HubAccessService.grantedTo`), and what their storage quota has left.
 */
export const JobHubAccess = z.object({
  userId: z.string(),
  /** The owner is an admin (who may use every snapshot of the cache). */
  admin: z.boolean(),
  /** `model:Org/Name@<commit>` of the snapshots the owner's records (or public ones) let them use. */
  granted: z.array(z.string()),
  /** Bytes this job may download before its owner's storage quota is full; null: no quota (admins, `storage_quota_bytes=0`). */
  budgetBytes: z.number().nullable(),
  /** Setting storage_quota_bytes, for the error. */
  quotaBytes: z.number(),
});
export type JobHubAccess = z.output<typeof JobHubAccess>;

/** How a job runner's `model.path` finds `hf:` repos (RunnerPaths.hub). */
export interface HubResolver {
  /** The snapshot `ref` names, fetched when missing; `token` is the job owner's (`model.hf_token`), or null. */
  resolve(ref: HubRef, options: { token: string | null; field?: string; log?: (line: string) => void; signal?: AbortSignal }): Promise<HubSnapshot>;
}

/**
 * A job's access to the Hub, on behalf of its owner (docs/models.md, "Who may use a snapshot"):
 *
 * - a repo of `hub_token_repos` is fetched with the worker's `HF_TOKEN`;
 * - any other repo is asked of the Hub without a token, then with the owner's (`model.hf_token`); the
 *   Hub's answer is what proves access, so a commit sha the cache holds is asked about too, unless the
 *   owner may already use that snapshot (their records, a public one, the operator's pull);
 * - offline, only snapshots the owner may use;
 * - a refusal reads like a repo that does not exist, so a job cannot learn what others cached.
 *
 * Every snapshot used is reported (`hub` runner message) with how it was reached and the bytes
 * downloaded, which the worker records for the owner; downloads stop at the owner's storage quota.
 */
export class JobHub implements HubResolver {
  private readonly caches = new Map<string | null, HubCache>();
  private budget: number | null;

  constructor(
    readonly settings: HubSettings,
    private readonly access: JobHubAccess,
    private readonly report: (use: HubUse) => void,
  ) {
    this.budget = access.budgetBytes;
  }

  async resolve(ref: HubRef, options: { token: string | null; field?: string; log?: (line: string) => void; signal?: AbortSignal }): Promise<HubSnapshot> {
    const field = options.field ?? 'model.path';
    const name = formatHubRef(ref);
    const base = { field, log: options.log, signal: options.signal, budget: this.budgetFor(name, field) };
    if (operatorServes(ref.repo, this.settings.operatorRepos)) return this.used(await this.cache(this.settings.token).resolve(ref, base), 'operator');

    const cached = await this.cache(null).cachedSnapshot(ref);
    const usable = cached !== null && (await this.mayUse(ref, cached.commit));
    if (usable && (this.settings.offline || (ref.revision !== null && isCommitSha(ref.revision)))) return cached;
    if (this.settings.offline) throw this.cache(null).notCached(name, field);

    const tries: Array<[string | null, HubAccessKind]> = [[null, 'public']];
    if (options.token) tries.push([options.token, 'token']);
    for (const [token, access] of tries) {
      try {
        return this.used(await this.cache(token).resolve(ref, { ...base, askHub: true }), access);
      } catch (error) {
        if (!(error instanceof AppError && error.code === ErrorCode.MODEL_NOT_FOUND)) throw error;
      }
    }
    // The Hub refused the owner's credentials, but the snapshot is theirs to use (an operator's pull, say).
    if (usable) return cached;
    throw new AppError(
      ErrorCode.MODEL_NOT_FOUND,
      `${field} ${name}: no such ${ref.type} repo or revision on ${this.settings.endpoint}, or not one this job may read ` +
        `(a private or gated repo is fetched with its owner's Hugging Face token: model.hf_token, which opentinker fills from HF_TOKEN)`,
      { field },
    );
  }

  private cache(token: string | null): HubCache {
    let cache = this.caches.get(token);
    if (!cache) this.caches.set(token, (cache = new HubCache({ ...this.settings, token })));
    return cache;
  }

  /** The rule of hub-access.ts with what a runner knows: its owner's records and this cache's operator marker. */
  private async mayUse(ref: HubRef, commit: string): Promise<boolean> {
    const granted = this.access.granted.includes(hubSnapshotKey({ type: ref.type, repo: ref.repo, commit }));
    const facts = {
      repo: ref.repo,
      operatorShared: await this.cache(null).isShared(ref, commit),
      records: granted ? [{ userId: this.access.userId, access: 'token' as const }] : [],
    };
    return mayUseHubSnapshot({ userId: this.access.userId, admin: this.access.admin }, facts, this.settings.operatorRepos);
  }

  private used(snapshot: HubSnapshot, access: HubAccessKind): HubSnapshot {
    if (this.budget !== null) this.budget = Math.max(0, this.budget - snapshot.downloadedBytes);
    this.report({ type: snapshot.ref.type, repo: snapshot.ref.repo, commit: snapshot.commit, access, downloadedBytes: snapshot.downloadedBytes });
    return snapshot;
  }

  private budgetFor(name: string, field: string): { bytes: number; exceeded: (needed: number) => Error } | undefined {
    if (this.budget === null) return undefined;
    const left = this.budget;
    const quota = this.access.quotaBytes;
    return {
      bytes: left,
      exceeded: (needed) =>
        new AppError(
          ErrorCode.QUOTA_EXCEEDED,
          `${field} ${name} needs ${gib(needed)} (${needed} bytes) from the Hub, more than your storage quota has left (${Math.max(0, left)} bytes of ` +
            `${quota}: operator setting storage_quota_bytes, which counts datasets, uploaded models, checkpoints and Hub downloads)`,
          { field, details: { quota_bytes: quota, needed_bytes: needed } },
        ),
    };
  }
}
