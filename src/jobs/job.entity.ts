import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { epochMs } from '../core/columns';

export const JOB_STATES = ['queued', 'starting', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type JobState = (typeof JOB_STATES)[number];
export const ACTIVE_STATES: readonly JobState[] = ['starting', 'running'];
export const FINAL_STATES: readonly JobState[] = ['succeeded', 'failed', 'cancelled'];

export interface JobResources {
  gpus: number;
  cpu_slots: number;
}

/** Devices a worker gave a job, e.g. `["gpu:0", "cpu:3"]`. */
export type DeviceIds = string[];

export interface JobProgress {
  step: number;
  total: number | null;
  message: string | null;
}

@Entity('jobs')
@Index('idx_jobs_queue', ['state', 'priority', 'createdAt'])
/**
 * Queued jobs only, each user's in the order they start: (owner, admin_priority DESC, priority DESC, created_at, id).
 * The migration creates it with those directions (`FairDispatch1765710000000`); TypeORM's decorator cannot state them.
 */
@Index('idx_jobs_dispatch', ['ownerId', 'adminPriority', 'priority', 'createdAt', 'id'], { where: `"state" = 'queued'` })
@Index('idx_jobs_owner', ['ownerId', 'createdAt', 'id'])
@Index('idx_jobs_owner_started', ['ownerId', 'startedAt'], { where: '"started_at" IS NOT NULL' })
@Index('idx_jobs_created', ['createdAt', 'id'])
export class JobEntity {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id!: string;

  @Column({ name: 'owner_id', type: 'varchar', length: 36 })
  ownerId!: string;

  @Column({ type: 'varchar', length: 32 })
  kind!: string;

  @Column({ type: 'varchar', length: 128, nullable: true })
  name!: string | null;

  @Column({ type: 'varchar', length: 16 })
  state!: JobState;

  @Column({ type: 'integer' })
  priority!: number;

  /**
   * The part of `priority` that counts across users: the priority itself when an admin gave one above
   * `max_user_priority` (only admins can), else 0. Other priorities order only their owner's own jobs.
   */
  @Column({ name: 'admin_priority', type: 'integer', default: 0 })
  adminPriority!: number;

  /** The spec's `environment.id` (train, inference and session jobs), kept beside it so listings need not read the spec. */
  @Column({ name: 'environment_id', type: 'varchar', length: 128, nullable: true })
  environmentId!: string | null;

  /** The validated spec with every default filled in: what the job really ran with. */
  @Column({ type: 'simple-json' })
  spec!: Record<string, unknown>;

  @Column({ type: 'simple-json' })
  resources!: JobResources;

  @Column({ type: 'simple-json', nullable: true })
  devices!: DeviceIds | null;

  @Index()
  @Column({ name: 'worker_id', type: 'varchar', length: 64, nullable: true })
  workerId!: string | null;

  @Column({ type: 'integer' })
  attempts!: number;

  @Column({ name: 'max_attempts', type: 'integer' })
  maxAttempts!: number;

  @Column({ type: 'text', nullable: true })
  error!: string | null;

  @Column({ name: 'exit_code', type: 'integer', nullable: true })
  exitCode!: number | null;

  @Column({ type: 'simple-json', nullable: true })
  progress!: JobProgress | null;

  /** What a resumable kind saved to pick up where it stopped after losing its worker. */
  @Column({ name: 'resume_state', type: 'simple-json', nullable: true })
  resumeState!: unknown;

  @Column({ name: 'cancel_requested_at', type: 'bigint', nullable: true, transformer: epochMs })
  cancelRequestedAt!: number | null;

  @Column({ name: 'lease_expires_at', type: 'bigint', nullable: true, transformer: epochMs })
  leaseExpiresAt!: number | null;

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMs })
  createdAt!: number;

  @Column({ name: 'started_at', type: 'bigint', nullable: true, transformer: epochMs })
  startedAt!: number | null;

  @Column({ name: 'finished_at', type: 'bigint', nullable: true, transformer: epochMs })
  finishedAt!: number | null;

  @Column({ name: 'updated_at', type: 'bigint', transformer: epochMs })
  updatedAt!: number;

  /** Raised by every UPDATE of the row ({@link NEXT_VERSION}): the job list keeps each job's JSON by (id, version). */
  @Column({ type: 'integer', default: 0 })
  version!: number;
}

/**
 * Set with every UPDATE of a job row. The job list reuses a job's JSON while its version is the one it was
 * written at, so a write that leaves the version alone is not listed until the job changes again.
 */
export const NEXT_VERSION = { version: () => '"version" + 1' } as const;

/** What a job listing shows: the job without its spec and the worker's bookkeeping (resume state, lease). */
export type JobSummary = Omit<JobEntity, 'spec' | 'resumeState' | 'leaseExpiresAt' | 'adminPriority'>;
