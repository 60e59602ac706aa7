import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { epochMs } from '../core/columns';

export type JobEventType = 'state' | 'progress' | 'metrics' | 'log' | 'artifact';

/**
 * One entry of a job's event stream. The auto-increment id orders events across processes and is the
 * SSE event id, so a client that reconnects with `Last-Event-ID` misses nothing.
 */
@Entity('job_events')
@Index('idx_job_events_job', ['jobId', 'id'])
export class JobEventEntity {
  @PrimaryGeneratedColumn('increment')
  id!: number;

  @Column({ name: 'job_id', type: 'varchar', length: 36 })
  jobId!: string;

  @Column({ type: 'varchar', length: 16 })
  type!: JobEventType;

  @Column({ type: 'simple-json' })
  data!: unknown;

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMs })
  createdAt!: number;
}
