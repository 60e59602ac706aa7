import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { epochMs } from '../core/columns';

/** One file of an uploaded model folder. */
export interface UserModelFile {
  path: string;
  size: number;
  sha256: string;
}

/** A Hugging Face model folder a user uploaded (`model:<id>`): its files live at `<home>/models/<id>/`. */
@Entity('models')
@Index('idx_models_owner', ['ownerId', 'createdAt', 'id'])
@Index('idx_models_owner_content', ['ownerId', 'contentSha256'])
export class UserModelEntity {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id!: string;

  @Column({ name: 'owner_id', type: 'varchar', length: 36 })
  ownerId!: string;

  @Column({ type: 'varchar', length: 128 })
  name!: string;

  /** config.json's `model_type` (qwen2, llama, …). */
  @Column({ name: 'model_type', type: 'varchar', length: 64 })
  modelType!: string;

  @Column({ type: 'bigint', transformer: epochMs })
  bytes!: number;

  /** The folder's content hash ({@link modelContentHash}): the CLI uploads a folder once per hash. */
  @Column({ name: 'content_sha256', type: 'varchar', length: 64 })
  contentSha256!: string;

  @Column({ type: 'simple-json' })
  files!: UserModelFile[];

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMs })
  createdAt!: number;
}
