import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { epochMs } from '../core/columns';

export const SESSION_OPS = ['train_step', 'validate', 'save_checkpoint', 'sample', 'close'] as const;
export type SessionOp = (typeof SESSION_OPS)[number];
export const SESSION_CALL_STATES = ['pending', 'running', 'succeeded', 'failed'] as const;
export type SessionCallState = (typeof SESSION_CALL_STATES)[number];

/**
 * One call to a job runner that answers calls: a client-driven training session's (`op` one of
 * {@link SESSION_OPS}), or a Tinker runner's (the ops of `kinds/tinker/tinker-ops.ts`).
 * `(job_id, call_id)` is unique: the call id is the idempotency key, so a retried `train_step` (or a
 * Tinker request resubmitted with its `seq_id`) finds the first one instead of running twice.
 */
@Entity('session_calls')
@Index('idx_session_calls_call', ['jobId', 'callId'], { unique: true })
export class SessionCallEntity {
  @PrimaryGeneratedColumn('increment')
  id!: number;

  @Column({ name: 'job_id', type: 'varchar', length: 36 })
  jobId!: string;

  @Column({ name: 'call_id', type: 'varchar', length: 128 })
  callId!: string;

  @Column({ type: 'varchar', length: 32 })
  op!: string;

  @Column({ type: 'simple-json' })
  args!: Record<string, unknown>;

  @Column({ type: 'varchar', length: 16 })
  state!: SessionCallState;

  @Column({ type: 'simple-json', nullable: true })
  result!: unknown;

  @Column({ type: 'text', nullable: true })
  error!: string | null;

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMs })
  createdAt!: number;

  @Column({ name: 'started_at', type: 'bigint', nullable: true, transformer: epochMs })
  startedAt!: number | null;

  @Column({ name: 'finished_at', type: 'bigint', nullable: true, transformer: epochMs })
  finishedAt!: number | null;
}
