import type { HubResolver } from '../hub/job-hub';
import type { CallMessage, RunnerPolicy } from './runner-protocol';

/** The calls of a client-driven session, one at a time, in the order they were made. */
export interface CallInbox {
  /** The next call, or null after `timeoutMs` without one (or when the job is stopping). */
  next(timeoutMs: number): Promise<CallMessage | null>;
  reply(id: number, outcome: { result: unknown } | { error: string }): void;
}

/**
 * What a kind's runner gets: its spec (the stored spec parsed again by the kind's schema, secrets put
 * back), a place to write, and ways to report.
 */
export interface RunContext<Spec = Record<string, unknown>> {
  jobId: string;
  spec: Spec;
  attempt: number;
  /** What the previous attempt saved with {@link checkpoint}, or null on a fresh start. */
  resumeState: unknown;
  workDir: string;
  /** Where things live: the installation (plugin discovery), the data directory, other jobs' folders. */
  paths: RunnerPaths;
  /** Aborted when the job is cancelled or its worker shuts down: stop soon and return. */
  signal: AbortSignal;
  log(line: string): void;
  progress(step: number, total?: number | null, message?: string | null): void;
  metrics(step: number, values: Record<string, number>): void;
  /** The operator's limits for this job (see {@link RunnerPolicy}). */
  policy: RunnerPolicy;
  /**
   * Says the job resumed at `step`: the metric points recorded after it (by the attempt that was lost)
   * are dropped, since this attempt reports those steps again; series named with `keepPrefixes` (e.g.
   * a warm-up's `sft/`, numbered on their own) stay.
   */
  resumed(step: number, keepPrefixes?: string[]): void;
  /** Saves resume state; a job re-queued after losing its worker gets it back. */
  checkpoint(state: unknown): void;
  /** Publishes a file under `workDir` as a job artifact. */
  artifact(name: string, path: string): void;
  /** Calls relayed by the worker (only jobs of a kind with the `calls` capability get any). */
  calls: CallInbox;
}

export type KindRunner<Spec = Record<string, unknown>> = (ctx: RunContext<Spec>) => Promise<void>;

export interface RunnerPaths {
  /** The installation root (its package.json declares the first-party environments). */
  hostRoot: string;
  pluginsDir: string;
  home: string;
  /** `<home>/jobs`: each job's folder is `<jobsDir>/<id>` (its runner's workDir is `<jobsDir>/<id>/work`). */
  jobsDir: string;
  /** `<home>/datasets`: uploaded datasets. */
  datasetsDir: string;
  /** Folders a model may be loaded from when named by path (see `openableModelDir`). */
  modelRoots: string[];
  /** Where `hf:` models come from, on the job owner's behalf; absent: this process cannot fetch them. */
  hub?: HubResolver;
}
