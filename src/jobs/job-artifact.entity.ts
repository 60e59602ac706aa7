import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { epochMs } from '../core/columns';

@Entity('job_artifacts')
@Index('idx_job_artifacts_name', ['jobId', 'name'], { unique: true })
export class JobArtifactEntity {
  @PrimaryGeneratedColumn('increment')
  id!: number;

  @Column({ name: 'job_id', type: 'varchar', length: 36 })
  jobId!: string;

  @Column({ type: 'varchar', length: 255 })
  name!: string;

  /** Absolute path on the worker that wrote it. */
  @Column({ type: 'text' })
  path!: string;

  @Column({ name: 'worker_id', type: 'varchar', length: 64, nullable: true })
  workerId!: string | null;

  @Column({ type: 'bigint', transformer: epochMs })
  size!: number;

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMs })
  createdAt!: number;
}
