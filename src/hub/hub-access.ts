import { z } from 'zod';
import { isHubRef, parseHubRef, type HubRepoType } from './hub-ref';

/**
 * Who may use a Hub snapshot (a repo at a commit) of a server's caches. One rule, applied by chat
 * (`model: "hf:…"`), `GET /v1/models` and the job runner resolving a `model.path` (docs/models.md):
 *
 * - a repo of the operator's `hub_token_repos` (fetched with the server's `HF_TOKEN`): every tenant;
 * - a snapshot the operator pulled into that cache (`opentinker models pull`): every tenant;
 * - a snapshot some job fetched without a token (the Hub serves it to anyone): every tenant;
 * - a snapshot a job fetched with its owner's token (`model.hf_token`): that owner only, and any other
 *   user whose own job proves access to it with the Hub;
 * - admins: every snapshot.
 */

/**
 * How a job got a snapshot, as its runner reports it (and the `hub_access.access` column stores it):
 * `public`, the Hub answered without a token (anyone may read the repo); `token`, the owner's own token
 * (`model.hf_token`) was needed; `operator`, a repo of `hub_token_repos`, fetched with the server's token.
 */
export const HubAccessKind = z.enum(['public', 'token', 'operator']);
export type HubAccessKind = z.output<typeof HubAccessKind>;

/** A snapshot a job used, reported by its runner (the `hub` message): the record of who may use it, and the bytes its download added. */
export const HubUse = z.object({
  type: z.enum(['model', 'dataset']) satisfies z.ZodType<HubRepoType>,
  repo: z.string(),
  commit: z.string(),
  access: HubAccessKind,
  /** Bytes this job downloaded into its worker's cache (0: all cached). */
  downloadedBytes: z.number(),
});
export type HubUse = z.output<typeof HubUse>;

/** One user's record of a snapshot (a `hub_access` row). */
export interface HubAccessRecord {
  userId: string;
  access: HubAccessKind;
}

/** A snapshot by its one name: `model:Org/Name@<commit>`. */
export function hubSnapshotKey(s: { type: HubRepoType; repo: string; commit: string }): string {
  return `${s.type}:${s.repo}@${s.commit}`;
}

/** Whether `hub_token_repos` lists the repo (`Org/Name`, a bare `Name`, or `Org/*`); case-insensitive, as the Hub's ids are. */
export function operatorServes(repo: string, operatorRepos: readonly string[]): boolean {
  const id = repo.toLowerCase();
  return operatorRepos.some((entry) => {
    const e = entry.toLowerCase();
    return e.endsWith('/*') ? id.startsWith(e.slice(0, -1)) && !id.slice(e.length - 1).includes('/') : e === id;
  });
}

/** What is known of one snapshot when deciding whether a user may use it. */
export interface HubSnapshotFacts {
  repo: string;
  /** The operator pulled it into this cache (its `.shared` marker). */
  operatorShared: boolean;
  /** The `hub_access` rows of this snapshot (or, in a job runner, the owner's and the public ones). */
  records: readonly HubAccessRecord[];
}

/** The rule above: whether `user` may see and load the snapshot. */
export function mayUseHubSnapshot(user: { userId: string; admin: boolean }, facts: HubSnapshotFacts, operatorRepos: readonly string[]): boolean {
  if (user.admin || facts.operatorShared || operatorServes(facts.repo, operatorRepos)) return true;
  return facts.records.some((r) => r.access === 'public' || r.userId === user.userId);
}

/** The Hub repos a job spec names (`hf:` strings anywhere in it, `model.path` today), each once. */
export function hubReposIn(spec: unknown): Array<{ type: HubRepoType; repo: string }> {
  const found = new Map<string, { type: HubRepoType; repo: string }>();
  const walk = (node: unknown, depth: number): void => {
    if (depth > 16) return;
    if (typeof node === 'string') {
      if (!isHubRef(node)) return;
      try {
        const ref = parseHubRef(node);
        found.set(`${ref.type}:${ref.repo}`, { type: ref.type, repo: ref.repo });
      } catch {
        // Not a repo name: the runner refuses it with the reason.
      }
    } else if (node !== null && typeof node === 'object') {
      for (const value of Object.values(node)) walk(value, depth + 1);
    }
  };
  walk(spec, 0);
  return [...found.values()];
}
