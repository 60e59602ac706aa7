import { accessSync, constants, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { EnvironmentError } from '@opentinker/env-sdk';
import type { CommandPlan, RootEntry, SandboxTools } from './command';
import { DEFAULT_LIMITS } from './limits';
import type { SandboxLimits } from './limits';
import { RunPool } from './pool';
import { runSandboxed } from './runner';
import type { RunResult } from './runner';

/** Options of {@link PythonSandbox.create}. */
export interface PythonSandboxOptions {
  /** Python interpreter inside the read-only root. Default `/usr/bin/python3` (Debian's). */
  python?: string;
  /**
   * Unprivileged uid (and gid) runs use when the host process is root. Default 65534 (nobody). All
   * runs may share it: each run's process limit counts only its own processes (see `sandboxCommand`).
   */
  uid?: number;
  /** Runs at once; more wait in a queue. Default 2. */
  maxConcurrent?: number;
  limits?: Partial<SandboxLimits>;
  log?: (message: string) => void;
  /** Where to look for bwrap and setpriv (default: `PATH` and the usual system folders). */
  searchPath?: string[];
}

const HOW_TO_FIX =
  'The math-tool environment runs model-written Python only inside a bubblewrap sandbox and never without one. ' +
  'On Debian/Ubuntu: `apt-get install -y bubblewrap util-linux python3`. ' +
  'bubblewrap needs unprivileged user namespaces (`sysctl kernel.unprivileged_userns_clone=1`, `user.max_user_namespaces` > 0); ' +
  'inside a container, allow creating namespaces (e.g. Docker `--security-opt seccomp=unconfined --security-opt apparmor=unconfined`, or `--privileged`).';

const TOP_LEVEL = ['/bin', '/sbin', '/lib', '/lib64', '/lib32', '/libx32'];

/**
 * Runs Python programs in a bubblewrap sandbox with resource limits (see `sandboxCommand` for the
 * exact isolation). Create it with {@link PythonSandbox.create}, which checks the host and runs a
 * self-test; it throws `ENV_SANDBOX_UNAVAILABLE` (with how to fix it) instead of ever running code
 * unsandboxed.
 */
export class PythonSandbox {
  private readonly pool: RunPool;
  private readonly stop = new AbortController();
  private closed = false;

  private constructor(
    private readonly plan: CommandPlan,
    maxConcurrent: number,
  ) {
    this.pool = new RunPool(maxConcurrent);
  }

  /** The limits every run gets. */
  get limits(): SandboxLimits {
    return this.plan.limits;
  }

  /** Finds the tools, checks the interpreter, and proves the sandbox works by running `print(1+1)`. */
  static async create(options: PythonSandboxOptions = {}): Promise<PythonSandbox> {
    const log = options.log ?? (() => undefined);
    const limits: SandboxLimits = { ...DEFAULT_LIMITS, ...options.limits };
    const searchPath = options.searchPath ?? [...(process.env.PATH ?? '').split(delimiter), '/usr/local/bin', '/usr/bin', '/bin', '/usr/sbin', '/sbin'];
    if (process.platform !== 'linux') unavailable(`it needs Linux (this host is ${process.platform})`);
    const rootEntries = rootLayout();
    const inside = ['/usr/bin', ...rootEntries.filter((e) => e.kind === 'dir').map((e) => e.path)];
    const tools: SandboxTools = {
      bwrap: findTool('bwrap', searchPath, 'bubblewrap (`bwrap`) is not installed'),
      prlimit: findTool('prlimit', inside, '`prlimit` (util-linux) is not installed under /usr/bin'),
      setpriv: findTool('setpriv', searchPath, '`setpriv` (util-linux) is not installed'),
      timeout: findTool('timeout', inside, '`timeout` (coreutils) is not installed under /usr/bin'),
      sh: findTool('sh', inside, 'no `sh` under /usr/bin or /bin'),
    };
    const python = checkPython(options.python ?? '/usr/bin/python3', rootEntries);
    const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
    const uid = isRoot ? (options.uid ?? 65534) : null;
    if (uid !== null && (!Number.isInteger(uid) || uid < 1 || uid > 0xfffffffe)) unavailable(`the sandbox uid must be a positive integer, got ${uid}`);
    if (!isRoot) {
      log('math-tool: the server is not root, so sandboxed Python keeps the server user id (inside its own user, pid and mount namespaces)');
    }
    const sandbox = new PythonSandbox({ tools, python, rootEntries, limits, uid }, options.maxConcurrent ?? 2);
    await sandbox.selfTest();
    return sandbox;
  }

  /** Runs a program (waiting for a free slot first). Never rejects for the program's behaviour. */
  async run(code: string, signal?: AbortSignal): Promise<RunResult> {
    if (this.closed) throw new EnvironmentError('ENV_UNAVAILABLE', 'The Python sandbox was closed');
    return this.pool.use(async () => {
      const abort = anySignal(this.stop.signal, signal);
      try {
        return await runSandboxed(this.plan, code, abort.signal);
      } finally {
        abort.dispose();
      }
    });
  }

  /** Stops running programs and refuses new ones. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.pool.close();
    this.stop.abort();
  }

  private async selfTest(): Promise<void> {
    const result = await this.run('print(1+1)\nimport os\nprint(os.getuid())');
    const lines = result.output.text.trim().split('\n');
    if (result.status !== 'ok' || lines[0] !== '2') {
      const said = result.output.text.trim() || result.detail || '(no output)';
      unavailable(`its self-test \`print(1+1)\` failed (${result.status}, exit ${result.exitCode}): ${said.slice(0, 500)}`);
    }
    if (lines[1] === '0') unavailable('its self-test ran as root inside the sandbox');
  }
}

function unavailable(reason: string): never {
  throw new EnvironmentError('ENV_SANDBOX_UNAVAILABLE', `The Python sandbox is unavailable: ${reason}. ${HOW_TO_FIX}`);
}

function findTool(name: string, dirs: string[], missing: string): string {
  for (const dir of dirs) {
    if (!dir || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // keep looking
    }
  }
  return unavailable(missing);
}

/** How /bin, /lib, /lib64… look on this host: links (merged /usr) are recreated, folders bound read-only. */
function rootLayout(): RootEntry[] {
  const entries: RootEntry[] = [];
  for (const path of TOP_LEVEL) {
    try {
      const stat = lstatSync(path);
      if (stat.isSymbolicLink()) entries.push({ path, kind: 'symlink', target: readlinkSync(path) });
      else if (stat.isDirectory()) entries.push({ path, kind: 'dir' });
    } catch {
      // absent on this host
    }
  }
  return entries;
}

function checkPython(python: string, rootEntries: RootEntry[]): string {
  if (!isAbsolute(python)) unavailable(`python must be an absolute path, got ${JSON.stringify(python)}`);
  let real: string;
  try {
    real = realpathSync(python);
    accessSync(real, constants.X_OK);
  } catch {
    return unavailable(`${python} does not exist or is not executable (on Debian: apt-get install -y python3)`);
  }
  const inside = ['/usr', ...rootEntries.filter((e) => e.kind === 'dir').map((e) => e.path)];
  if (!inside.some((dir) => real.startsWith(`${dir}/`))) {
    unavailable(`${python} resolves to ${real}, outside the folders the sandbox shows (${inside.join(', ')}); use an interpreter installed under /usr`);
  }
  return python;
}

/** A signal that aborts when either does; `dispose` removes the listeners it added. */
function anySignal(a: AbortSignal, b?: AbortSignal): { signal: AbortSignal; dispose(): void } {
  if (!b) return { signal: a, dispose: () => undefined };
  const both = new AbortController();
  const stop = () => both.abort();
  if (a.aborted || b.aborted) both.abort();
  a.addEventListener('abort', stop, { once: true });
  b.addEventListener('abort', stop, { once: true });
  return {
    signal: both.signal,
    dispose: () => {
      a.removeEventListener('abort', stop);
      b.removeEventListener('abort', stop);
    },
  };
}
