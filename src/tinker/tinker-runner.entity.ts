import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { epochMs } from '../core/columns';

/** The `tinker` job that runs a session's models on one base model (one per session and base while it lives). */
@Entity('tinker_runners')
@Index('idx_tinker_runners_session', ['sessionId', 'baseKey'])
export class TinkerRunnerEntity {
  @PrimaryColumn({ name: 'job_id', type: 'varchar', length: 36 })
  jobId!: string;

  @Column({ name: 'session_id', type: 'varchar', length: 36 })
  sessionId!: string;

  @Column({ name: 'owner_id', type: 'varchar', length: 36 })
  ownerId!: string;

  /** The base as a job names it (`{"path":"hf:Org/Name"}`, `{"preset":"tiny-char"}`): clients naming it differently share the runner. */
  @Column({ name: 'base_key', type: 'varchar', length: 600 })
  baseKey!: string;

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMs })
  createdAt!: number;
}
