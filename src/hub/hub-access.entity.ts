import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { epochMs } from '../core/columns';
import type { HubAccessKind } from './hub-access';
import type { HubRepoType } from './hub-ref';

/**
 * One user's use of one Hub snapshot (a repo at a commit) by their jobs: the record of who may use what
 * a worker fetched (the rule is `mayUseHubSnapshot`), shared by every machine of the server (each worker
 * keeps its own cache, the database is one), and the bytes the user's jobs downloaded for it, which
 * count toward their storage quota.
 */
@Entity('hub_access')
@Index('idx_hub_access_user', ['userId'])
export class HubAccessEntity {
  @PrimaryColumn({ name: 'repo_type', type: 'varchar', length: 8 })
  repoType!: HubRepoType;

  @PrimaryColumn({ type: 'varchar', length: 200 })
  repo!: string;

  @PrimaryColumn({ type: 'varchar', length: 40 })
  commit!: string;

  @PrimaryColumn({ name: 'user_id', type: 'varchar', length: 36 })
  userId!: string;

  /** `public` once any of the user's jobs got it without a token; else `token` or `operator`. */
  @Column({ type: 'varchar', length: 16 })
  access!: HubAccessKind;

  @Column({ name: 'downloaded_bytes', type: 'bigint', transformer: epochMs })
  downloadedBytes!: number;

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMs })
  createdAt!: number;

  @Column({ name: 'updated_at', type: 'bigint', transformer: epochMs })
  updatedAt!: number;
}
