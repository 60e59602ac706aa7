import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { epochMs } from '../core/columns';

@Entity('api_keys')
export class ApiKeyEntity {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id!: string;

  @Index()
  @Column({ name: 'user_id', type: 'varchar', length: 36 })
  userId!: string;

  @Column({ type: 'varchar', length: 100 })
  name!: string;

  /** First characters of the key, shown in listings so a user can tell keys apart. */
  @Column({ type: 'varchar', length: 16 })
  prefix!: string;

  /** SHA-256 of the whole key, hex. The key itself is never stored. */
  @Column({ type: 'varchar', length: 64, unique: true })
  hash!: string;

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMs })
  createdAt!: number;

  @Column({ name: 'last_used_at', type: 'bigint', nullable: true, transformer: epochMs })
  lastUsedAt!: number | null;

  @Column({ name: 'revoked_at', type: 'bigint', nullable: true, transformer: epochMs })
  revokedAt!: number | null;
}
