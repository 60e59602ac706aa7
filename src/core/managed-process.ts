import { ChildProcess, spawn } from 'node:child_process';

export interface ManagedProcessOptions {
  /** The Node script to run (with this server's Node binary). */
  entry: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** `pipe` to read the process's stdout (`child.stdout`); stderr is always piped. Default `ignore`. */
  stdout?: 'pipe' | 'ignore';
  /** Lines of stderr kept for {@link ProcessExit.stderrTail}. Default 20. */
  stderrLines?: number;
  /** Called with each chunk of stderr as it arrives. */
  onStderr?(text: string): void;
}

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last lines the process wrote to stderr (and why it could not start or be reached, if so). */
  stderrTail: string[];
}

/**
 * A Node child process (a job runner, a model server) in its own process group, with an IPC channel.
 * Stopping signals the whole group, so whatever the process started (an environment's sandboxed
 * Python, a tool's shell) goes with it: SIGTERM first, then SIGKILL once the grace period is over.
 * `exited` resolves once, when the process has exited and its output is closed.
 *
 * @example
 * ```ts
 * const p = new ManagedProcess({ entry: 'dist/job-runner.main.js', env });
 * p.child.on('message', (m) => handle(m));
 * p.stop(10_000); // SIGTERM to the group, SIGKILL after 10 s if it is still there
 * const { code, signal, stderrTail } = await p.exited;
 * ```
 */
export class ManagedProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<ProcessExit>;
  private readonly stderrTail: string[] = [];
  private killTimer?: NodeJS.Timeout;
  private done = false;

  constructor(options: ManagedProcessOptions) {
    const keep = options.stderrLines ?? 20;
    this.child = spawn(process.execPath, [options.entry], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      detached: true,
      stdio: ['ignore', options.stdout ?? 'ignore', 'pipe', 'ipc'],
      serialization: 'json',
    });
    this.child.stderr!.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      options.onStderr?.(text);
      this.note(...text.split('\n').filter((l) => l.trim() !== ''));
      this.stderrTail.splice(0, Math.max(0, this.stderrTail.length - keep));
    });
    this.exited = new Promise((resolve) => {
      this.child.once('error', (error) => this.note(`could not start ${options.entry}: ${error.message}`));
      this.child.once('close', (code, signal) => {
        this.done = true;
        clearTimeout(this.killTimer);
        resolve({ code, signal, stderrTail: [...this.stderrTail] });
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Whether the process has not exited yet (it may be stopping). */
  get running(): boolean {
    return !this.done && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Sends a message on the IPC channel; dropped when the process is gone (its exit is reported anyway). */
  send(message: unknown): void {
    if (!this.child.connected) return;
    this.child.send(message as never, (error) => {
      if (error) this.note(`could not reach the process: ${error.message}`);
    });
  }

  /**
   * Stops the process group: SIGTERM now, SIGKILL after `graceMs` (at once when 0). Calling it again
   * keeps the first deadline, or kills at once when `graceMs` is 0. Resolves with the exit.
   */
  stop(graceMs: number): Promise<ProcessExit> {
    if (!this.running) return this.exited;
    if (graceMs <= 0) {
      this.signalGroup('SIGKILL');
      return this.exited;
    }
    if (this.killTimer === undefined) {
      this.signalGroup('SIGTERM');
      this.killTimer = setTimeout(() => this.signalGroup('SIGKILL'), graceMs);
    }
    return this.exited;
  }

  private note(...lines: string[]): void {
    this.stderrTail.push(...lines);
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
