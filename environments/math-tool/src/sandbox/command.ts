import type { SandboxLimits } from './limits';

/** How a top-level folder of the host's root appears in the sandbox (merged-/usr hosts use links). */
export type RootEntry = { path: string; kind: 'symlink'; target: string } | { path: string; kind: 'dir' };

/** Programs the sandbox is built from (absolute paths, found at start). */
export interface SandboxTools {
  /** util-linux `setpriv` on the host: drops root to the sandbox uid. */
  setpriv: string;
  /** bubblewrap on the host. */
  bwrap: string;
  /** util-linux `prlimit`, inside the read-only root: sets the limits from inside the sandbox. */
  prlimit: string;
  /** coreutils `timeout`, inside the read-only root: the sandbox's pid 1. */
  timeout: string;
  /** A POSIX shell inside the read-only root, used only to merge stderr into stdout. */
  sh: string;
}

/** Everything needed to build the command line of one run. */
export interface CommandPlan {
  tools: SandboxTools;
  /** Absolute path of the Python interpreter; it must live inside the read-only root. */
  python: string;
  /** Top-level folders besides /usr that python needs (`/bin`, `/lib`, `/lib64`, …). */
  rootEntries: RootEntry[];
  /** Unprivileged uid/gid to run as (via `setpriv`), or null when the host process is not root. */
  uid: number | null;
  limits: SandboxLimits;
}

/**
 * Processes of a run besides the program's own: the sandbox's init (`timeout`). RLIMIT_NPROC is the
 * program's allowance plus this.
 */
export const SANDBOX_OVERHEAD_PROCESSES = 1;

/** Longest program (UTF-8 bytes) passed on the command line; Linux caps one argument at 128 KiB. */
export const MAX_CODE_BYTES = 100_000;

const MIB = 1024 * 1024;

/**
 * The environment of the sandboxed interpreter: nothing of the host's. `PYTHONHASHSEED=0` keeps set
 * and dict orders of strings the same from run to run, so replays of an episode are identical.
 */
export const SANDBOX_ENV: Readonly<Record<string, string>> = Object.freeze({
  PATH: '/usr/local/bin:/usr/bin:/bin',
  HOME: '/tmp',
  TMPDIR: '/tmp',
  LANG: 'C.UTF-8',
  PYTHONHASHSEED: '0',
  PYTHONDONTWRITEBYTECODE: '1',
  PYTHONUNBUFFERED: '1',
  PYTHONNOUSERSITE: '1',
  PYTHONIOENCODING: 'utf-8',
  OMP_NUM_THREADS: '1',
  OPENBLAS_NUM_THREADS: '1',
  MKL_NUM_THREADS: '1',
  MPLBACKEND: 'Agg',
});

/**
 * The argv (program first) that runs `code` in the sandbox:
 *
 * `setpriv` (as root only: drop to the unprivileged uid, no supplementary groups; as root, bwrap alone
 * would not limit forking) →
 * `bwrap` (new user, pid, network, ipc, uts and cgroup namespaces; no further user namespaces; dies
 * with its parent; a new session so it cannot reach the host's terminal; a read-only root holding
 * only /usr and its top-level links, a size-limited /tmp as the only writable folder, a private
 * /proc and a minimal read-only /dev; no /etc, no /home, nothing of the server's files; an empty
 * environment; it writes the sandbox's host pid to fd 3 so the server can kill the sandbox) →
 * `prlimit` (CPU seconds, address space, processes, file size, open files, no core dumps) →
 * `timeout` as the sandbox's pid 1 (it waits for python and passes its status on, 128 + n for a
 * signal; it kills python after the wall limit plus 2 s as a second line of defence) →
 * `sh -c 'exec "$0" "$@" 2>&1'` (stderr merged into stdout, in order; the shell replaces itself) →
 * `python3 -B -u -s -c code`.
 *
 * The limits are set inside the new user namespace on purpose: RLIMIT_NPROC then counts the processes
 * of this sandbox alone (the kernel counts processes per user namespace and uid), so concurrent runs
 * sharing a uid, or a server that is not root, never share a process budget, while the namespace's
 * limit still holds. Only the program's output reaches stdout; what the sandbox tools themselves say
 * goes to stderr.
 */
export function sandboxCommand(plan: CommandPlan, code: string): string[] {
  const { tools, limits } = plan;
  const cpu = Math.max(1, Math.ceil(limits.cpuSeconds));
  const setpriv = plan.uid === null ? [] : [tools.setpriv, `--reuid=${plan.uid}`, `--regid=${plan.uid}`, '--clear-groups', '--'];
  const bwrap = [
    tools.bwrap,
    '--info-fd',
    '3',
    '--unshare-all',
    '--unshare-user',
    '--disable-userns',
    '--die-with-parent',
    '--new-session',
    '--as-pid-1',
    '--hostname',
    'sandbox',
    '--ro-bind',
    '/usr',
    '/usr',
  ];
  for (const entry of plan.rootEntries) {
    if (entry.kind === 'symlink') bwrap.push('--symlink', entry.target, entry.path);
    else bwrap.push('--ro-bind', entry.path, entry.path);
  }
  bwrap.push(
    '--size',
    String(Math.floor(limits.scratchMb * MIB)),
    '--tmpfs',
    '/tmp',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--remount-ro',
    '/dev',
    '--remount-ro',
    '/',
    '--chdir',
    '/tmp',
    '--clearenv',
  );
  for (const [key, value] of Object.entries(SANDBOX_ENV)) bwrap.push('--setenv', key, value);
  bwrap.push('--');
  const prlimit = [
    tools.prlimit,
    `--cpu=${cpu}:${cpu + 1}`,
    `--as=${Math.floor(limits.memoryMb * MIB)}`,
    `--nproc=${limits.maxProcesses + SANDBOX_OVERHEAD_PROCESSES}`,
    `--fsize=${Math.floor(limits.fileSizeMb * MIB)}`,
    '--core=0',
    '--nofile=256',
    '--',
  ];
  const backstop = Math.ceil(limits.wallSeconds) + 2;
  const run = [tools.timeout, '-s', 'KILL', String(backstop), tools.sh, '-c', 'exec "$0" "$@" 2>&1', plan.python, '-B', '-u', '-s', '-c', code];
  return [...setpriv, ...bwrap, ...prlimit, ...run];
}
