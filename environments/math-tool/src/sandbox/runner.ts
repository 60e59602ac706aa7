import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { MAX_CODE_BYTES, sandboxCommand } from './command';
import type { CommandPlan } from './command';
import { OutputCollector } from './output';
import type { CappedOutput } from './output';

/**
 * How a run ended:
 * - `ok`: exit status 0; `error`: another exit status (usually an uncaught exception, traceback in
 *   the output);
 * - `cpu_limit`: killed by SIGXCPU at the CPU-time limit; `timeout`: still running at the wall-clock
 *   limit, the process group was killed;
 * - `output_limit`: printed more than the byte budget and was stopped;
 * - `killed`: SIGKILL from the kernel (CPU hard limit after ignoring SIGXCPU, or out of memory);
 * - `signal`: died of another signal (e.g. SIGSEGV);
 * - `aborted`: stopped because its episode or environment closed;
 * - `rejected`: never started (program too long or not representable on a command line);
 * - `sandbox_error`: the sandbox could not be started.
 */
export type RunStatus = 'ok' | 'error' | 'cpu_limit' | 'timeout' | 'output_limit' | 'killed' | 'signal' | 'aborted' | 'rejected' | 'sandbox_error';

/** The result of one sandboxed run. */
export interface RunResult {
  status: RunStatus;
  /** The sandbox's exit status (128 + n when the program died of signal n), or null. */
  exitCode: number | null;
  /** Name of the signal that ended the program, if one did. */
  signal: string | null;
  /** stdout and stderr, merged in order, capped. */
  output: CappedOutput;
  /** Wall-clock milliseconds from start to end (not deterministic: keep it out of `info`). */
  wallMs: number;
  /** Why the run was rejected or the sandbox failed, for `rejected` and `sandbox_error`. */
  detail?: string;
}

const SIGNALS: Record<number, string> = {
  1: 'SIGHUP',
  2: 'SIGINT',
  3: 'SIGQUIT',
  4: 'SIGILL',
  5: 'SIGTRAP',
  6: 'SIGABRT',
  7: 'SIGBUS',
  8: 'SIGFPE',
  9: 'SIGKILL',
  10: 'SIGUSR1',
  11: 'SIGSEGV',
  12: 'SIGUSR2',
  13: 'SIGPIPE',
  14: 'SIGALRM',
  15: 'SIGTERM',
  24: 'SIGXCPU',
  25: 'SIGXFSZ',
  31: 'SIGSYS',
};

const EMPTY_OUTPUT: CappedOutput = { text: '', tail: '', truncated: false, totalBytes: 0, overBudget: false };

/** Extra time given to a killed run to end before the whole process group is killed as well. */
const KILL_GRACE_MS = 1000;
/** Extra time after that before the result is returned regardless. */
const CLOSE_GRACE_MS = 2000;
/** Bytes kept of what the sandbox tools themselves print (bwrap, prlimit, setpriv errors). */
const DIAGNOSTIC_BYTES = 4096;

/**
 * Runs Python `code` once in the sandbox described by `plan` and resolves with its capped output
 * and how it ended. Never rejects. The wall-clock limit, the output byte budget and `signal` each
 * kill the sandbox: its pid 1 first (so the kernel tears down every process inside and bubblewrap
 * reaps it, leaving no zombie to the host's init), then the whole process group if that is not enough.
 */
export function runSandboxed(plan: CommandPlan, code: string, signal?: AbortSignal): Promise<RunResult> {
  const started = Date.now();
  const early = (status: 'rejected' | 'aborted', detail: string): Promise<RunResult> =>
    Promise.resolve({ status, exitCode: null, signal: null, output: EMPTY_OUTPUT, wallMs: Date.now() - started, detail });
  if (code.includes('\u0000')) return early('rejected', 'the program contains NUL characters');
  if (Buffer.byteLength(code, 'utf8') > MAX_CODE_BYTES) return early('rejected', `the program is longer than ${MAX_CODE_BYTES} bytes`);
  if (signal?.aborted) return early('aborted', 'the episode was closed');

  const argv = sandboxCommand(plan, code);
  const collector = new OutputCollector(plan.limits.maxOutputChars, plan.limits.maxOutputBytes);
  return new Promise<RunResult>((resolve) => {
    let stoppedFor: 'timeout' | 'output_limit' | 'aborted' | null = null;
    let settled = false;
    let exited = false;
    let exitCode: number | null = null;
    let exitSignal: NodeJS.Signals | null = null;
    let spawnError: Error | null = null;
    let sandboxPid: number | null = null;
    let info = '';
    let diagnostics = '';
    const timers: NodeJS.Timeout[] = [];

    const child = spawn(argv[0], argv.slice(1), {
      detached: true, // its own process group: the last-resort kill reaches everything it started
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
    });
    const stdout = child.stdio[1] as Readable;
    const stderr = child.stdio[2] as Readable;
    const infoPipe = child.stdio[3] as Readable;

    const killGroup = () => {
      if (child.pid === undefined || exited) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const kill = (why: 'timeout' | 'output_limit' | 'aborted') => {
      if (settled || stoppedFor !== null) return;
      stoppedFor = why;
      if (sandboxPid !== null && !exited) {
        try {
          process.kill(sandboxPid, 'SIGKILL');
        } catch {
          // already gone
        }
        timers.push(setTimeout(killGroup, KILL_GRACE_MS));
      } else {
        killGroup();
      }
      timers.push(setTimeout(finish, KILL_GRACE_MS + CLOSE_GRACE_MS));
    };
    timers.push(setTimeout(() => kill('timeout'), Math.max(1, plan.limits.wallSeconds * 1000)));
    const onAbort = () => kill('aborted');
    signal?.addEventListener('abort', onAbort, { once: true });

    stdout.on('data', (chunk: Buffer) => {
      if (stoppedFor !== null) return;
      if (!collector.push(chunk)) kill('output_limit');
    });
    stderr.on('data', (chunk: Buffer) => {
      if (diagnostics.length < DIAGNOSTIC_BYTES) diagnostics += chunk.toString('utf8').slice(0, DIAGNOSTIC_BYTES - diagnostics.length);
    });
    infoPipe.on('data', (chunk: Buffer) => {
      if (info.length > 4096) return;
      info += chunk.toString('utf8');
      const m = /"child-pid"\s*:\s*(\d+)/.exec(info);
      if (m && sandboxPid === null) sandboxPid = Number(m[1]);
    });
    child.on('error', (error) => {
      spawnError = error;
      finish();
    });
    child.on('exit', (code, sig) => {
      exited = true;
      exitCode = code;
      exitSignal = sig;
    });
    child.on('close', (code, sig) => {
      exited = true;
      exitCode = code;
      exitSignal = sig;
      finish();
    });

    function finish(): void {
      if (settled) return;
      settled = true;
      for (const t of timers) clearTimeout(t);
      signal?.removeEventListener('abort', onAbort);
      stdout.destroy();
      stderr.destroy();
      infoPipe.destroy();
      const wallMs = Date.now() - started;
      const output = collector.finish();
      const said = diagnostics.trim();
      if (spawnError !== null) {
        resolve({ status: 'sandbox_error', exitCode: null, signal: null, output, wallMs, detail: (spawnError as Error).message });
        return;
      }
      const fromCode = exitCode !== null && exitCode > 128 ? (SIGNALS[exitCode - 128] ?? `signal ${exitCode - 128}`) : null;
      const sigName = fromCode ?? exitSignal;
      let status: RunStatus;
      if (stoppedFor !== null) status = stoppedFor;
      else if (exitCode === 0) status = 'ok';
      else if (said !== '') status = 'sandbox_error';
      else if (fromCode === 'SIGXCPU') status = 'cpu_limit';
      else if (sigName === 'SIGKILL') status = 'killed';
      else if (sigName !== null) status = 'signal';
      else status = 'error';
      const result: RunResult = { status, exitCode, signal: sigName, output, wallMs };
      if (said !== '') result.detail = said;
      resolve(result);
    }
  });
}
