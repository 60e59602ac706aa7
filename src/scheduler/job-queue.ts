import type { JobEntity } from '../jobs/job.entity';
import type { DevicePool } from './device-pool';

/** What a worker brings to a claim: who it is, its devices, and the per-user limit to respect. */
export interface ClaimRequest {
  workerId: string;
  pool: DevicePool;
  userLimit: number;
}

/**
 * The port between job submission and workers. Two adapters: the embedded one (the database is the
 * queue; one machine) and BullMQ on Redis (any number of workers anywhere). In both, the database row
 * stays the truth about a job's state and the claim is a conditional update of it, so a job can never
 * be run twice; the queue only decides who looks at which job when.
 */
export interface JobQueue {
  readonly name: 'embedded' | 'bullmq';
  /** Called once the job row is committed as queued. Idempotent. */
  enqueue(job: JobEntity): Promise<void>;
  /** Forgets a queued job that was cancelled. */
  remove(jobId: string): Promise<void>;
  /** Worker side: claims the next job this worker should run now, or returns null. */
  claimNext(request: ClaimRequest): Promise<JobEntity | null>;
  /** Jobs waiting to be claimed. */
  depth(): Promise<number>;
  /** Throws when the queue's backing store is unreachable. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export const JOB_QUEUE = Symbol('JobQueue');
