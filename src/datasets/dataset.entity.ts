import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { epochMs } from '../core/columns';
import type { DatasetFormat } from '../rollout/dataset-files';
import type { BadRow } from './dataset-check';

/** An uploaded dataset: its file lives at `<home>/datasets/<id>/data.<format>`. */
@Entity('datasets')
@Index('idx_datasets_owner', ['ownerId', 'createdAt', 'id'])
@Index('idx_datasets_created', ['createdAt', 'id'])
export class DatasetEntity {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id!: string;

  @Column({ name: 'owner_id', type: 'varchar', length: 36 })
  ownerId!: string;

  @Column({ type: 'varchar', length: 128 })
  name!: string;

  /** The environment whose row check the file passed. */
  @Column({ name: 'environment_id', type: 'varchar', length: 128 })
  environmentId!: string;

  @Column({ type: 'varchar', length: 16 })
  format!: DatasetFormat;

  @Column({ name: 'row_count', type: 'integer' })
  rowCount!: number;

  @Column({ name: 'invalid_row_count', type: 'integer' })
  invalidRowCount!: number;

  /** The first bad rows the upload check found (the environment skips them when it loads the file). */
  @Column({ name: 'bad_rows', type: 'simple-json' })
  badRows!: BadRow[];

  @Column({ type: 'bigint', transformer: epochMs })
  bytes!: number;

  @Column({ name: 'column_names', type: 'simple-json' })
  columns!: string[];

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMs })
  createdAt!: number;
}
