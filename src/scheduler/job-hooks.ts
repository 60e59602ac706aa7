import type { AnyJobKind } from '../kinds/spec/job-kind';
import type { JobEntity } from '../jobs/job.entity';
import type { CallMessage, FailureCategory, RunnerMessage } from '../runner/runner-protocol';

/**
 * Worker-side work that a kind capability adds while a job runs, such as relaying the calls of a kind
 * with `calls`. The module that owns the capability registers its hook with the supervisor
 * (`JobSupervisor.addHook`), so the supervisor names no kind and depends on no such module.
 */
export interface JobHook {
  /** Whether jobs of `kind` need this hook (asked of the kind's capabilities). */
  appliesTo(kind: AnyJobKind): boolean;
  /** The job's runner was started; `send` writes to its IPC channel. */
  attach(job: JobEntity, send: (message: CallMessage) => void): AttachedJobHook;
}

/** Why a job's runner failed, as the job's error records it. */
export interface JobFailure {
  error: string;
  category: FailureCategory;
}

/** A hook attached to one running job. */
export interface AttachedJobHook {
  /** A runner message the supervisor does not record itself (`call-result`); awaited in the job's write order. */
  onMessage(message: Extract<RunnerMessage, { type: 'call-result' }>): Promise<void>;
  /**
   * The runner is gone; runs before the job's end is recorded. `failure` is the job's error (host paths
   * redacted) and whose fault it was, when the runner failed on its own.
   */
  detach(failure?: JobFailure): Promise<void>;
}
