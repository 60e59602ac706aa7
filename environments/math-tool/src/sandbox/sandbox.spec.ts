import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { PythonSandbox } from './sandbox';
import { sandboxCommand } from './command';
import { DEFAULT_LIMITS } from './limits';

/**
 * Hostile programs against the real sandbox (needs Debian's `bubblewrap`; CI installs it). Each test
 * checks that the sandbox held, that the run ended with a sensible status and output, and that the
 * sandbox still works afterwards.
 */
describe('PythonSandbox (real bubblewrap)', () => {
  let sandbox: PythonSandbox;
  let secretDir: string;
  let secretFile: string;
  let server: Server;
  let port: number;

  beforeAll(async () => {
    sandbox = await PythonSandbox.create({ limits: { cpuSeconds: 2, wallSeconds: 20 } });
    secretDir = mkdtempSync(join(tmpdir(), 'math-tool-secret-'));
    secretFile = join(secretDir, 'secret.txt');
    writeFileSync(secretFile, 'TOP-SECRET');
    server = createServer((socket) => socket.end('HELLO FROM THE HOST\n'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    sandbox.close();
    rmSync(secretDir, { recursive: true, force: true });
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const stillWorks = async () => {
    const r = await sandbox.run('print(sum(range(10)))');
    expect(r.status).toBe('ok');
    expect(r.output.text).toBe('45\n');
  };

  it('runs normal code: print(sum(range(10))) prints 45', async () => {
    const r = await sandbox.run('print(sum(range(10)))');
    expect(r).toMatchObject({ status: 'ok', exitCode: 0, signal: null });
    expect(r.output).toEqual({ text: '45\n', tail: '', truncated: false, totalBytes: 3, overBudget: false });
  });

  it('merges stderr into stdout in order, and reports exceptions with their traceback', async () => {
    const r = await sandbox.run('import sys\nprint("a")\nprint("b", file=sys.stderr)\nprint("c")\n1/0');
    expect(r.status).toBe('error');
    expect(r.exitCode).toBe(1);
    expect(r.output.text).toMatch(/^a\nb\nc\nTraceback \(most recent call last\):\n {2}File "<string>", line 5, in <module>\nZeroDivisionError: division by zero\n$/);
  });

  it('runs as an unprivileged user with an empty environment, no /etc, no host files', async () => {
    const r = await sandbox.run(
      'import os\nprint(os.getuid() != 0, os.getgid() != 0, os.getgroups())\nprint(sorted(os.listdir("/")))\nprint(sorted(os.environ))\nprint(os.getcwd())',
    );
    expect(r.status).toBe('ok');
    const [ids, root, env, cwd] = r.output.text.trim().split('\n');
    expect(ids).toBe('True True []');
    const uid = await sandbox.run('import os\nprint(os.getuid(), os.getgid())');
    expect(uid.output.text).toBe(process.getuid!() === 0 ? '65534 65534\n' : `${process.getuid!()} ${process.getgid!()}\n`);
    expect(root).not.toMatch(/'etc'|'home'|'root'|'work'|'opt'|'var'|'srv'|'mnt'/);
    expect(env).not.toMatch(/OPENTINKER|NODE|npm_|JEST/);
    expect(cwd).toBe('/tmp');
  });

  it('cannot read /etc/passwd', async () => {
    const r = await sandbox.run('print(open("/etc/passwd").read())');
    expect(r.status).toBe('error');
    expect(r.output.text).toContain("FileNotFoundError: [Errno 2] No such file or directory: '/etc/passwd'");
    expect(r.output.text).not.toContain('root:x:0:0');
  });

  it("cannot read the host's files: the repository, a temp file, root's home", async () => {
    const repoFile = join(process.cwd(), 'package.json');
    const code = [
      'import os',
      `for p in [${JSON.stringify(repoFile)}, ${JSON.stringify(secretFile)}, "/root/.bashrc", "/home", "/proc/1/root/etc/passwd"]:`,
      '    try:',
      '        print("READ", p, open(p).read()[:40])',
      '    except Exception as e:',
      '        print("DENIED", p, type(e).__name__)',
    ].join('\n');
    const r = await sandbox.run(code);
    expect(r.status).toBe('ok');
    expect(r.output.text).not.toContain('READ');
    expect(r.output.text).not.toContain('TOP-SECRET');
    expect(r.output.text.match(/DENIED/g)).toHaveLength(5);
  });

  it('cannot write outside its scratch /tmp, and /tmp is private to the run', async () => {
    const r = await sandbox.run(
      [
        'for p in ["/usr/x", "/x", "/dev/x", "/dev/shm/x", "/tmp/x"]:',
        '    try:',
        '        open(p, "w").write("hi"); print("WROTE", p)',
        '    except OSError as e:',
        '        print("DENIED", p, e.strerror)',
      ].join('\n'),
    );
    expect(r.output.text).toBe(
      'DENIED /usr/x Read-only file system\nDENIED /x Read-only file system\nDENIED /dev/x Read-only file system\nDENIED /dev/shm/x Read-only file system\nWROTE /tmp/x\n',
    );
    const again = await sandbox.run('import os\nprint(os.listdir("/tmp"))');
    expect(again.output.text).toBe('[]\n');
  });

  it('cannot open a socket to the host: a server listening on 127.0.0.1 is unreachable', async () => {
    const r = await sandbox.run(
      [
        'import socket',
        'try:',
        `    s = socket.create_connection(("127.0.0.1", ${port}), timeout=2)`,
        '    print("CONNECTED", s.recv(100))',
        'except OSError as e:',
        '    print("REFUSED", type(e).__name__)',
        'try:',
        '    socket.getaddrinfo("example.com", 80)',
        '    print("RESOLVED")',
        'except OSError as e:',
        '    print("NO DNS", type(e).__name__)',
      ].join('\n'),
    );
    expect(r.status).toBe('ok');
    expect(r.output.text).toMatch(/^REFUSED (ConnectionRefusedError|OSError)\nNO DNS gaierror\n$/);
  });

  it('stops an infinite loop at the CPU limit, and the sandbox still works', async () => {
    const r = await sandbox.run('print("looping")\nwhile True:\n    pass');
    expect(['cpu_limit', 'killed', 'timeout']).toContain(r.status);
    expect(r.status).toBe('cpu_limit');
    expect(r.output.text).toBe('looping\n');
    expect(r.wallMs).toBeLessThan(20_000);
    await stillWorks();
  });

  it('stops a sleeping program at the wall-clock limit, leaving no process behind', async () => {
    const quick = await PythonSandbox.create({ limits: { wallSeconds: 1.5 } });
    try {
      const r = await quick.run('import os, time  # wall-test-marker\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\nprint("sleeping")\ntime.sleep(60)');
      expect(r.status).toBe('timeout');
      expect(r.output.text).toBe('sleeping\n');
      expect(r.wallMs).toBeGreaterThanOrEqual(1400);
      expect(r.wallMs).toBeLessThan(4000);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const left = execFileSync('ps', ['-eo', 'pid=,stat=,args='])
        .toString()
        .split('\n')
        .filter((l) => l.includes('wall-test-marker'));
      expect(left).toEqual([]);
    } finally {
      quick.close();
    }
  });

  it('contains a fork bomb (process limit), and the sandbox still works', async () => {
    const r = await sandbox.run(
      [
        'import os',
        'n = 0',
        'try:',
        '    while True:',
        '        if os.fork() == 0:',
        '            import time; time.sleep(30); os._exit(0)',
        '        n += 1',
        'except OSError as e:',
        '    print("fork failed after", n, "children:", e.strerror)',
      ].join('\n'),
    );
    expect(r.status).toBe('ok');
    const m = /^fork failed after (\d+) children: Resource temporarily unavailable\n$/.exec(r.output.text);
    expect(m).not.toBeNull();
    expect(Number(m![1])).toBe(DEFAULT_LIMITS.maxProcesses - 1);
    await stillWorks();
  });

  it('gives each run its own process budget, even when runs share a uid', async () => {
    const bomb = (tag: string) =>
      [
        'import os, time',
        'time.sleep(0.3)',
        'n = 0',
        'try:',
        '    while True:',
        '        if os.fork() == 0:',
        '            time.sleep(2); os._exit(0)',
        '        n += 1',
        'except OSError:',
        `    print("${tag}", n)`,
      ].join('\n');
    const [a, b] = await Promise.all([sandbox.run(bomb('a')), sandbox.run(bomb('b'))]);
    expect([a.output.text, b.output.text]).toEqual([`a ${DEFAULT_LIMITS.maxProcesses - 1}\n`, `b ${DEFAULT_LIMITS.maxProcesses - 1}\n`]);
  });

  it('refuses a 10 GB allocation with MemoryError', async () => {
    const r = await sandbox.run('try:\n    x = bytearray(10 * 1024**3)\nexcept MemoryError:\n    print("MemoryError")\nx = bytearray(10 * 1024**3)');
    expect(r.status).toBe('error');
    expect(r.output.text).toMatch(/^MemoryError\nTraceback[\s\S]*MemoryError\n$/);
    await stillWorks();
  });

  it('truncates 100 MB of output with a bounded read and stops the printer', async () => {
    const before = process.memoryUsage().rss;
    const r = await sandbox.run('import sys\nchunk = "y" * 1048575 + "\\n"\nfor _ in range(100):\n    sys.stdout.write(chunk)');
    expect(r.status).toBe('output_limit');
    expect(r.output.truncated).toBe(true);
    expect(r.output.text).toBe('y'.repeat(DEFAULT_LIMITS.maxOutputChars - DEFAULT_LIMITS.maxOutputChars / 4));
    expect(r.output.tail).toMatch(new RegExp(`^[y\n]{${DEFAULT_LIMITS.maxOutputChars / 4}}$`));
    expect(r.output.totalBytes).toBeLessThan(DEFAULT_LIMITS.maxOutputBytes + 2 * 1024 * 1024);
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024);
    await stillWorks();
  });

  it('stops a huge file at the file-size limit', async () => {
    const r = await sandbox.run(
      [
        'try:',
        '    with open("/tmp/big", "wb") as f:',
        '        for _ in range(1024):',
        '            f.write(b"z" * 1048576)',
        'except OSError as e:',
        '    print(e.strerror)',
        'import os',
        'print(os.path.getsize("/tmp/big") // 1048576)',
      ].join('\n'),
    );
    expect(r.status).toBe('ok');
    expect(r.output.text).toBe(`File too large\n${DEFAULT_LIMITS.fileSizeMb}\n`);
  });

  it('fills the scratch folder only up to its size', async () => {
    const r = await sandbox.run(
      ['n = 0', 'try:', '    while True:', '        open(f"/tmp/f{n}", "wb").write(b"z" * 8 * 1048576); n += 1', 'except OSError as e:', '    print(e.strerror, n <= 8)'].join(
        '\n',
      ),
    );
    expect(r.output.text).toBe('No space left on device True\n');
  });

  it('cannot create user namespaces or see host processes', async () => {
    const r = await sandbox.run(
      [
        'import os, ctypes',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'print(libc.unshare(0x10000000), ctypes.get_errno())',
        'print(sorted(int(p) for p in os.listdir("/proc") if p.isdigit())[:2])',
      ].join('\n'),
    );
    expect(r.status).toBe('ok');
    const [unshare, pids] = r.output.text.trim().split('\n');
    expect(unshare).toMatch(/^-1 (1|28)$/); // EPERM or ENOSPC: no new user namespace
    expect(pids).toBe('[1, 2]');
  });

  it('rejects programs that cannot be passed safely', async () => {
    expect((await sandbox.run('print(1)\u0000')).status).toBe('rejected');
    expect((await sandbox.run(`x = "${'a'.repeat(200_000)}"`)).status).toBe('rejected');
  });

  it('runs at most max_concurrent_runs at once and keeps results apart', async () => {
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => sandbox.run(`print(${i} * 7)`)));
    expect(results.map((r) => r.output.text)).toEqual(['0\n', '7\n', '14\n', '21\n', '28\n', '35\n']);
  });

  it('close() stops a running program', async () => {
    const local = await PythonSandbox.create({ limits: { wallSeconds: 30 } });
    const running = local.run('import time\ntime.sleep(30)');
    await new Promise((r) => setTimeout(r, 200));
    local.close();
    const r = await running;
    expect(r.status).toBe('aborted');
    expect(r.wallMs).toBeLessThan(5000);
    await expect(local.run('print(1)')).rejects.toMatchObject({ code: 'ENV_UNAVAILABLE' });
  });
});

describe('PythonSandbox.create refuses to run without a sandbox', () => {
  it('throws ENV_SANDBOX_UNAVAILABLE with how to fix when bwrap is missing', async () => {
    await expect(PythonSandbox.create({ searchPath: ['/nonexistent'] })).rejects.toMatchObject({
      code: 'ENV_SANDBOX_UNAVAILABLE',
      message: expect.stringMatching(/bubblewrap \(`bwrap`\) is not installed[\s\S]*apt-get install -y bubblewrap/),
    });
  });

  it('throws when the interpreter is missing or outside the sandbox root', async () => {
    await expect(PythonSandbox.create({ python: '/nonexistent/python3' })).rejects.toMatchObject({ code: 'ENV_SANDBOX_UNAVAILABLE' });
    await expect(PythonSandbox.create({ python: 'python3' })).rejects.toMatchObject({ code: 'ENV_SANDBOX_UNAVAILABLE' });
    await expect(PythonSandbox.create({ python: process.execPath })).rejects.toMatchObject({ code: 'ENV_SANDBOX_UNAVAILABLE' });
  });

  it('throws when the self-test fails (a "bwrap" that cannot build the sandbox)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fake-bwrap-'));
    chmodSync(dir, 0o755);
    try {
      writeFileSync(join(dir, 'bwrap'), '#!/bin/sh\necho "bwrap: No permissions to create new namespace" >&2\nexit 1\n');
      // chmod, not the mode option: the server's umask (077) would leave it unreadable to the sandbox uid.
      chmodSync(dir, 0o755);
      chmodSync(join(dir, 'bwrap'), 0o755);
      await expect(PythonSandbox.create({ searchPath: [dir, '/usr/bin', '/bin'] })).rejects.toMatchObject({
        code: 'ENV_SANDBOX_UNAVAILABLE',
        message: expect.stringContaining('No permissions to create new namespace'),
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('sandboxCommand', () => {
  const plan = {
    tools: { prlimit: '/usr/bin/prlimit', setpriv: '/usr/bin/setpriv', bwrap: '/usr/bin/bwrap', timeout: '/usr/bin/timeout', sh: '/usr/bin/sh' },
    python: '/usr/bin/python3',
    rootEntries: [
      { path: '/bin', kind: 'symlink' as const, target: 'usr/bin' },
      { path: '/lib', kind: 'dir' as const },
    ],
    uid: 65534,
    limits: DEFAULT_LIMITS,
  };

  it('chains setpriv, bwrap, prlimit (inside), timeout (pid 1) and sh (stderr into stdout), and passes the code as one argument', () => {
    const argv = sandboxCommand(plan, 'print(1)');
    expect(argv.slice(0, 6)).toEqual(['/usr/bin/setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--', '/usr/bin/bwrap']);
    const limits = argv.indexOf('/usr/bin/prlimit');
    expect(argv[limits - 1]).toBe('--');
    expect(argv.slice(limits, limits + 8)).toEqual(['/usr/bin/prlimit', '--cpu=5:6', '--as=536870912', '--nproc=7', '--fsize=16777216', '--core=0', '--nofile=256', '--']);
    expect(argv.slice(limits + 8)).toEqual([
      '/usr/bin/timeout',
      '-s',
      'KILL',
      '12',
      '/usr/bin/sh',
      '-c',
      'exec "$0" "$@" 2>&1',
      '/usr/bin/python3',
      '-B',
      '-u',
      '-s',
      '-c',
      'print(1)',
    ]);
    const joined = argv.join(' ');
    for (const flag of ['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--new-session', '--as-pid-1', '--clearenv']) expect(argv).toContain(flag);
    expect(joined).toContain('--info-fd 3');
    expect(joined).toContain('--ro-bind /usr /usr --symlink usr/bin /bin --ro-bind /lib /lib');
    expect(joined).toContain('--size 67108864 --tmpfs /tmp --proc /proc --dev /dev --remount-ro /dev --remount-ro / --chdir /tmp');
    expect(joined).not.toMatch(/\/etc|\/home|\/root|\/work/);
  });

  it('skips setpriv when not root', () => {
    const argv = sandboxCommand({ ...plan, uid: null }, 'print(1)');
    expect(argv).not.toContain('/usr/bin/setpriv');
    expect(argv[0]).toBe('/usr/bin/bwrap');
  });
});
