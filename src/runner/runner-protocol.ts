import type { EngineSettings } from '@opentinker/engine/settings';
import type { HostConfigInput } from '@opentinker/env-sdk';
import type { HubUse } from '../hub/hub-access';
import type { HubSettings } from '../hub/hub-settings';
import type { HubResolver, JobHubAccess } from '../hub/job-hub';
import type { UrlPolicy } from '../egress/egress-policy';
/**
 * Messages between a worker and the job runner child process it spawned (Node IPC channel). Logs do
 * not travel here: the runner's stdout and stderr are the job's log.
 */
export interface StartMessage {
  type: 'start';
  job: { id: string; kind: string; spec: Record<string, unknown>; attempt: number; resumeState: unknown };
  workDir: string;
  /** The data directory (`OPENTINKER_HOME`), the installation's folder and the plugins folder, as the worker resolved them. */
  paths: { home: string; hostRoot: string; pluginsDir: string };
  /** The worker's engine settings, threads defaulting to the job's CPU slots. */
  engine: EngineSettings;
  /** Setting runner_stacks: a failure's stack trace goes to the job's log. */
  stackTraces: boolean;
  /** What the job's owner may reach on this worker, from the worker's settings. */
  policy: RunnerPolicy;
  /** Spec values kept out of the stored spec, by dotted path (`environment.token`); put back before the run. */
  secrets: Record<string, string>;
}

/**
 * The operator's limits a job runner applies to the (tenant-written) spec it runs, on the machine that
 * opens the files and connections. The API checks the same rules at submission; the runner checks them
 * again where links are followed and names are resolved.
 */
export interface RunnerPolicy {
  /** Sandbox ceilings and operator values for the environment's config (`resolveTenantConfig`). */
  environmentHost: Required<Pick<HostConfigInput, 'limits' | 'settings'>>;
  /** Folders `model.path` may name (setting model_roots); the job's own folder is added by the runner. */
  modelRoots: string[];
  /** Which remote environment servers the job may connect to. */
  remoteEnvironments: UrlPolicy;
  /** How `hf:` models are fetched on this worker (its own cache, endpoint, token, limit). */
  hub?: HubSettings;
  /** What the job's owner may use from the Hub cache, and may still download (see JobHub). */
  hubAccess?: JobHubAccess;
  /** How a job streams to W&B (settings wandb_stream_seconds, wandb_finish_seconds); absent: their defaults. */
  wandb?: WandbStreamSettings;
}

export interface WandbStreamSettings {
  streamSeconds: number;
  finishSeconds: number;
}

export type RunnerMessage =
  | { type: 'running' }
  | { type: 'progress'; step: number; total: number | null; message: string | null }
  | { type: 'metrics'; step: number; values: Record<string, number> }
  | { type: 'checkpoint'; state: unknown }
  | { type: 'resumed'; step: number; keepPrefixes: string[] }
  | { type: 'artifact'; name: string; path: string }
  /** A Hub snapshot the job used: recorded for its owner (who may use it, the bytes downloaded). */
  | { type: 'hub'; use: HubUse }
  | { type: 'failed'; message: string }
  | { type: 'call-result'; id: number; result?: unknown; error?: string }
  | { type: 'done' };

/** A session call handed to the runner (worker → runner, after the start message). */
export interface CallMessage {
  type: 'call';
  id: number;
  op: string;
  args: Record<string, unknown>;
}

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
