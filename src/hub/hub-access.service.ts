import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { hubSnapshotKey, mayUseHubSnapshot, type HubAccessRecord, type HubUse } from './hub-access';
import { HubAccessEntity } from './hub-access.entity';
import type { HubRepoType } from './hub-ref';

/** Who asks: a user and their role (`admin` sees every snapshot). */
export interface HubCaller {
  userId: string;
  role: string;
}

/** A snapshot of a cache, as the access rule needs it. */
export interface HubSnapshotOfCache {
  type: HubRepoType;
  repo: string;
  commit: string;
  /** The operator pulled it into this cache (`opentinker models pull`). */
  operatorShared: boolean;
}

/**
 * The one place that says which Hub snapshots a user may see and load (`mayUseHubSnapshot` over the
 * `hub_access` table), for chat, `GET /v1/models` and the worker that starts a job (which hands the
 * owner's records to the job runner); and the owner of that table, where job runners' reports land.
 */
@Injectable()
export class HubAccessService {
  private readonly rows: Repository<HubAccessEntity>;

  constructor(
    dataSource: DataSource,
    private readonly config: AppConfig,
  ) {
    this.rows = dataSource.getRepository(HubAccessEntity);
  }

  /** Which of `snapshots` the caller may use, in their order. */
  async filterVisible<T extends HubSnapshotOfCache>(caller: HubCaller, snapshots: readonly T[]): Promise<T[]> {
    if (snapshots.length === 0) return [];
    const records = await this.recordsVisibleTo(caller.userId);
    const user = { userId: caller.userId, admin: caller.role === 'admin' };
    return snapshots.filter((s) =>
      mayUseHubSnapshot(user, { repo: s.repo, operatorShared: s.operatorShared, records: records.get(hubSnapshotKey(s)) ?? [] }, this.config.values.hub_token_repos),
    );
  }

  /** Whether the caller may use this snapshot. */
  async mayUse(caller: HubCaller, snapshot: HubSnapshotOfCache): Promise<boolean> {
    return (await this.filterVisible(caller, [snapshot])).length === 1;
  }

  /**
   * The snapshots of these repos the user's records let them use (`model:Org/Name@<commit>`): what a
   * job runner may take from its cache without proving access to the Hub again.
   */
  async grantedTo(userId: string, repos: ReadonlyArray<{ type: HubRepoType; repo: string }>): Promise<string[]> {
    if (repos.length === 0) return [];
    const wanted = new Set(repos.map((r) => `${r.type}:${r.repo}`));
    const out: string[] = [];
    for (const [key, records] of await this.recordsVisibleTo(userId)) {
      if (wanted.has(key.slice(0, key.lastIndexOf('@'))) && records.some((r) => r.access === 'public' || r.userId === userId)) out.push(key);
    }
    return out.sort();
  }

  /** Records what a job runner reported: the owner may use the snapshot from now on, and its download counts toward their quota. */
  async record(userId: string, use: HubUse): Promise<void> {
    const key = { repoType: use.type, repo: use.repo, commit: use.commit, userId };
    const bytes = Math.max(0, Math.floor(use.downloadedBytes));
    const update = async (): Promise<boolean> => {
      const now = Date.now();
      const set = {
        downloadedBytes: () => `downloaded_bytes + ${bytes}`,
        updatedAt: now,
        ...(use.access === 'public' ? { access: 'public' as const } : {}),
      };
      return ((await this.rows.update(key, set)).affected ?? 0) > 0;
    };
    if (await update()) return;
    try {
      const now = Date.now();
      await this.rows.insert({ ...key, access: use.access, downloadedBytes: bytes, createdAt: now, updatedAt: now });
    } catch (error) {
      // Another job of the same user inserted it first.
      if (!(await update())) throw error;
    }
  }

  /** Bytes the user's jobs downloaded from the Hub (their part of the storage quota). */
  async bytesOf(userId: string): Promise<number> {
    const row = await this.rows.createQueryBuilder('h').select('COALESCE(SUM(h.downloaded_bytes), 0)', 'total').where({ userId }).getRawOne<{ total: string | number }>();
    return Number(row?.total ?? 0);
  }

  /** The user's records and every public one, by snapshot key. */
  private async recordsVisibleTo(userId: string): Promise<Map<string, HubAccessRecord[]>> {
    const rows = await this.rows.find({ select: { repoType: true, repo: true, commit: true, userId: true, access: true }, where: [{ userId }, { access: 'public' }] });
    const out = new Map<string, HubAccessRecord[]>();
    for (const r of rows) {
      const key = hubSnapshotKey({ type: r.repoType, repo: r.repo, commit: r.commit });
      const list = out.get(key) ?? [];
      list.push({ userId: r.userId, access: r.access });
      out.set(key, list);
    }
    return out;
  }
}
