import { ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, WriteStream } from 'node:fs';
import { join } from 'node:path';
import type { JobEntity } from '../jobs/job.entity';
import type { CallMessage, RunnerMessage, StartMessage } from '../runner/runner-protocol';
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
  onMessage(message: RunnerMessage): void;
  onLog(text: string): void;
}

export interface JobExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last lines the runner wrote to stderr, for the error message of a failed job. */
  stderrTail: string[];
}

/**
 * Settings that must not reach job code (which may run third-party environments). The Hub token goes
 * to the runner in its start message instead, for the model download only.
 */
const SECRET_ENV = /^(OPENTINKER_(ADMIN_KEY|DATABASE_URL|REDIS_URL|API_KEY)|HF_TOKEN|HUGGING_FACE_HUB_TOKEN)$/;

/**
 * One job runner child process: spawned in its own process group so that cancelling kills the whole
 * tree, with the job's GPUs in CUDA_VISIBLE_DEVICES and its output appended to `<jobDir>/job.log`.
 */
export class JobProcess {
  readonly exited: Promise<JobExit>;
  private readonly child: ChildProcess;
  private readonly logFile: WriteStream;
  private readonly stderrTail: string[] = [];
  private readonly graceMs: number;
  private killTimer?: NodeJS.Timeout;

  constructor(job: JobEntity, options: JobProcessOptions) {
    this.graceMs = options.graceMs;
    mkdirSync(options.jobDir, { recursive: true });
    this.logFile = createWriteStream(join(options.jobDir, 'job.log'), { flags: 'a' });
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!SECRET_ENV.test(k)) env[k] = v;
    env.CUDA_VISIBLE_DEVICES = cudaVisibleDevices(job.devices ?? []);
    env.OPENTINKER_JOB_ID = job.id;

    this.child = spawn(process.execPath, [options.runnerEntry], {
      cwd: options.jobDir,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const output = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      this.logFile.write(chunk);
      options.onLog(text);
      if (stream === 'stderr') {
        this.stderrTail.push(...text.split('\n').filter((l) => l.trim() !== ''));
        this.stderrTail.splice(0, Math.max(0, this.stderrTail.length - 20));
      }
    };
    this.child.stdout!.on('data', output('stdout'));
    this.child.stderr!.on('data', output('stderr'));
    this.child.on('message', (m: RunnerMessage) => options.onMessage(m));
    this.exited = new Promise((resolve) => {
      this.child.once('error', (error) => {
        this.stderrTail.push(`could not start the job runner: ${error.message}`);
      });
      this.child.once('close', (code, signal) => {
        clearTimeout(this.killTimer);
        this.logFile.end();
        resolve({ code, signal, stderrTail: [...this.stderrTail] });
      });
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
    this.child.send(start, (error) => {
      if (error) this.stderrTail.push(`could not reach the job runner: ${error.message}`);
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Sends a message on the IPC channel (dropped when the runner is gone: its end is recorded anyway). */
  send(message: CallMessage): void {
    if (!this.child.connected) return;
    this.child.send(message, (error) => {
      if (error) this.stderrTail.push(`could not reach the job runner: ${error.message}`);
    });
  }

  /** Asks the runner to stop (SIGTERM to its group), then kills the group after the grace period. */
  stop(): void {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.signalGroup('SIGTERM');
    this.killTimer ??= setTimeout(() => this.signalGroup('SIGKILL'), this.graceMs);
  }

  kill(): void {
    this.signalGroup('SIGKILL');
  }

  private signalGroup(signal: NodeJS.Signals): void {
    const pid = this.child.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      try {
        this.child.kill(signal);
      } catch {
        // already gone
      }
    }
  }
}
