/**
 * Messages between a worker and the job runner child process it spawned (Node IPC channel). Logs do
 * not travel here: the runner's stdout and stderr are the job's log.
 */
export interface StartMessage {
  type: 'start';
  job: { id: string; kind: string; spec: Record<string, unknown>; attempt: number; resumeState: unknown };
  workDir: string;
  /** The data directory (`OPENTINKER_HOME`) and the plugins folder when configured (else `<install>/plugins`). */
  paths: { home: string; pluginsDir: string | null };
}

export type RunnerMessage =
  | { type: 'running' }
  | { type: 'progress'; step: number; total: number | null; message: string | null }
  | { type: 'metrics'; step: number; values: Record<string, number> }
  | { type: 'checkpoint'; state: unknown }
  | { type: 'artifact'; name: string; path: string }
  | { type: 'failed'; message: string }
  | { type: 'done' };

/** What a kind's runner gets: its spec, a place to write, and ways to report. */
export interface RunContext {
  jobId: string;
  spec: Record<string, unknown>;
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
  /** Saves resume state; a job re-queued after losing its worker gets it back. */
  checkpoint(state: unknown): void;
  /** Publishes a file under `workDir` as a job artifact. */
  artifact(name: string, path: string): void;
}

export type KindRunner = (ctx: RunContext) => Promise<void>;

export interface RunnerPaths {
  /** The installation root (its package.json declares the first-party environments). */
  hostRoot: string;
  pluginsDir: string;
  home: string;
  /** `<home>/jobs`: each job's folder is `<jobsDir>/<id>` (its runner's workDir is `<jobsDir>/<id>/work`). */
  jobsDir: string;
  /** `<home>/datasets`: uploaded datasets. */
  datasetsDir: string;
}
