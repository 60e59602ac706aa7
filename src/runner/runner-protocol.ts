/**
 * Messages between a worker and the job runner child process it spawned (Node IPC channel). Logs do
 * not travel here: the runner's stdout and stderr are the job's log.
 */
export interface StartMessage {
  type: 'start';
  job: { id: string; kind: string; spec: Record<string, unknown>; attempt: number; resumeState: unknown };
  workDir: string;
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
