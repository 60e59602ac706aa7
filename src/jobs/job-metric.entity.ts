import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { epochMs } from '../core/columns';

@Entity('job_metrics')
@Index('idx_job_metrics_job', ['jobId', 'name', 'step'])
export class JobMetricEntity {
  @PrimaryGeneratedColumn('increment')
  id!: number;

  @Column({ name: 'job_id', type: 'varchar', length: 36 })
  jobId!: string;

  @Column({ type: 'integer' })
  step!: number;

  @Column({ type: 'varchar', length: 128 })
  name!: string;

  @Column({ type: 'double precision' })
  value!: number;

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMs })
  createdAt!: number;
}
