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

  /** The non-secret start of the key shown in listings (`otk_<key id>`; `otk_…` for a key an operator chose). */
  @Column({ type: 'varchar', length: 16 })
  prefix!: string;

  /**
   * The key's id, read from the key itself, which finds the row to verify (see `parseApiKey`): a
   * generated key's 12-character id, or the 8 characters after `otk_` of a key issued before ids. Null
   * for a key an operator chose in any other form: nothing of its text is stored.
   */
  @Index('idx_api_keys_key_id')
  @Column({ name: 'key_id', type: 'varchar', length: 16, nullable: true })
  keyId!: string | null;

  /** SHA-256 of the whole key, hex, or `s:…` (scrypt) for a key an operator chose. The key itself is never stored. */
  @Column({ type: 'varchar', length: 64, unique: true })
  hash!: string;

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMs })
  createdAt!: number;

  @Column({ name: 'last_used_at', type: 'bigint', nullable: true, transformer: epochMs })
  lastUsedAt!: number | null;

  @Column({ name: 'revoked_at', type: 'bigint', nullable: true, transformer: epochMs })
  revokedAt!: number | null;
}
