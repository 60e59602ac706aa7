import { createWriteStream, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ManagedProcess, type ProcessExit } from '../core/managed-process';
import type { JobEntity } from '../jobs/job.entity';
import type { CallMessage, StartMessage } from '../runner/runner-protocol';
import { cpuThreads, cudaVisibleDevices } from './device-pool';

export interface JobProcessOptions {
  runnerEntry: string;
  jobDir: string;
  paths: StartMessage['paths'];
  /** The worker's engine settings; threads left unset become the job's CPU slots. */
  engine: StartMessage['engine'];
  stackTraces: boolean;
  policy: StartMessage['policy'];
  secrets: StartMessage['secrets'];
  graceMs: number;
  /** A message from the runner as it arrived: the supervisor parses it (`RunnerMessage`). */
  onMessage(message: unknown): void;
  onLog(text: string): void;
}

/** How the runner ended; `stderrTail` goes into the error message of a failed job. */
export type JobExit = ProcessExit;

/** What the supervisor holds of a job's runner: its end, its pid, its IPC channel and a way to stop it. */
export interface RunnerProcess {
  readonly exited: Promise<JobExit>;
  readonly pid: number | undefined;
  /** Sends a message on the IPC channel (dropped when the runner is gone: its end is recorded anyway). */
  send(message: CallMessage): void;
  /** Asks the runner to stop, then kills it after the grace period. */
  stop(): void;
}

/** Starts a job's runner: {@link startJobProcess} on a worker, a fake in the service specs. */
export type JobLauncher = (job: JobEntity, options: JobProcessOptions) => RunnerProcess;

/** The Nest token of the {@link JobLauncher} the supervisor uses (default {@link startJobProcess}). */
export const JOB_LAUNCHER = Symbol('JOB_LAUNCHER');

export const startJobProcess: JobLauncher = (job, options) => new JobProcess(job, options);

/**
 * Settings that must not reach job code (which may run third-party environments). The Hub token goes
 * to the runner in its start message instead, for the model download only. A W&B key on the worker is
 * the operator's: a job streams to W&B only with its owner's key (`trainer.wandb.api_key`), never this one.
 */
const SECRET_ENV = /^(OPENTINKER_(ADMIN_KEY|DATABASE_URL|REDIS_URL|API_KEY)|HF_TOKEN|HUGGING_FACE_HUB_TOKEN|WANDB_API_KEY)$/;

/**
 * One job runner child process ({@link ManagedProcess}: its own process group, so cancelling stops the
 * whole tree), with the job's GPUs in CUDA_VISIBLE_DEVICES and its output appended to `<jobDir>/job.log`.
 */
export class JobProcess implements RunnerProcess {
  readonly exited: Promise<JobExit>;
  private readonly process: ManagedProcess;
  private readonly graceMs: number;

  constructor(job: JobEntity, options: JobProcessOptions) {
    this.graceMs = options.graceMs;
    mkdirSync(options.jobDir, { recursive: true });
    const logFile = createWriteStream(join(options.jobDir, 'job.log'), { flags: 'a' });
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!SECRET_ENV.test(k)) env[k] = v;
    env.CUDA_VISIBLE_DEVICES = cudaVisibleDevices(job.devices ?? []);
    env.OPENTINKER_JOB_ID = job.id;

    const output = (text: string, chunk: Buffer | string) => {
      logFile.write(chunk);
      options.onLog(text);
    };
    this.process = new ManagedProcess({
      entry: options.runnerEntry,
      cwd: options.jobDir,
      env,
      stdout: 'pipe',
      onStderr: (text) => output(text, text),
    });
    this.process.child.stdout!.on('data', (chunk: Buffer) => output(chunk.toString('utf8'), chunk));
    this.process.child.on('message', (m: unknown) => options.onMessage(m));
    this.exited = this.process.exited.then((exit) => {
      logFile.end();
      return exit;
    });
    const start: StartMessage = {
      type: 'start',
      job: { id: job.id, kind: job.kind, spec: job.spec, attempt: job.attempts, resumeState: job.resumeState ?? null },
      workDir: join(options.jobDir, 'work'),
      paths: options.paths,
      // An operator's explicit setting wins; otherwise the engine's threads match the job's CPU slots.
      engine: { ...options.engine, engine_threads: options.engine.engine_threads ?? cpuThreads(job.devices ?? []) },
      stackTraces: options.stackTraces,
      policy: options.policy,
      secrets: options.secrets,
    };
    this.process.send(start);
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  /** Sends a message on the IPC channel (dropped when the runner is gone: its end is recorded anyway). */
  send(message: CallMessage): void {
    this.process.send(message);
  }

  /** Asks the runner to stop (SIGTERM to its group), then kills the group after the grace period. */
  stop(): void {
    void this.process.stop(this.graceMs);
  }
}
