import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestApp, TestApp, waitForState } from '../support/test-app';
import { BIN, runCli, type CliRun } from '../support/cli-process';

/**
 * The client commands of the real `opentinker` binary (built by `npm run build`) against a server this
 * test starts on a real port. HOME is a temporary folder, so credentials never touch the real one.
 */
describe('opentinker client commands', () => {
  let t: TestApp;
  let url: string;
  let home: string;
  let work: string;
  let aliceKey: string;

  function cli(args: string[], opts: { env?: Record<string, string>; input?: string; cwd?: string } = {}): Promise<CliRun> {
    return runCli(args, { env: cliEnv(opts.env), cwd: opts.cwd ?? work, input: opts.input });
  }

  function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, ...extra };
    for (const k of ['OPENTINKER_URL', 'OPENTINKER_API_KEY'] as const) if (!(k in extra)) delete env[k];
    return env;
  }

  beforeAll(async () => {
    t = await startTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    url = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
    home = mkdtempSync(join(tmpdir(), 'cli-home-'));
    work = mkdtempSync(join(tmpdir(), 'cli-work-'));
  });
  afterAll(async () => {
    await t.close();
    rmSync(home, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  });

  it('refuses to work before login, and refuses a bad key at login', async () => {
    const before = await cli(['jobs', 'list', '--url', url]);
    expect(before.code).toBe(4);
    expect(before.stderr).toContain('Not logged in. Run `opentinker login`');

    const wrong = await cli(['login', '--url', url, '--key', 'otk_wrong_key_0123456789abcdef']);
    expect(wrong.code).toBe(4);
    expect(wrong.stderr).toContain(`The server at ${url} refused the API key otk_wrong_ke…`);
    expect(wrong.stderr).not.toContain('0123456789abcdef');

    const notAKey = await cli(['login', '--url', url, '--key', 'hunter2']);
    expect(notAKey.code).toBe(2);
    expect(notAKey.stderr).toContain('does not look like an OpenTinker API key');
    expect(existsSync(join(home, '.opentinker', 'credentials'))).toBe(false);
  });

  it('logs in with a key from stdin, saving it with mode 0600', async () => {
    const login = await cli(['login', '--url', url], { input: `${t.adminKey}\n` });
    expect(login.stderr).toBe('');
    expect(login.code).toBe(0);
    expect(login.stdout).toContain(`Logged in to ${url} as admin (admin)`);
    const path = join(home, '.opentinker', 'credentials');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ url, key: t.adminKey });
    // The saved URL is used from now on, without --url.
    expect((await cli(['users', 'me'])).stdout).toContain('admin (admin');
  });

  it('manages users and keys', async () => {
    const created = await cli(['users', 'create', 'alice', '--json']);
    expect(created.code).toBe(0);
    aliceKey = JSON.parse(created.stdout).api_key.key;
    expect(aliceKey).toMatch(/^otk_/);
    const [list, asAlice, forbidden] = await Promise.all([
      cli(['users', 'list']),
      cli(['users', 'me', '--json'], { env: { OPENTINKER_API_KEY: aliceKey } }),
      cli(['users', 'list'], { env: { OPENTINKER_API_KEY: aliceKey } }),
    ]);
    expect(list.stdout).toMatch(/^NAME\s+ROLE\s+ID\s+CREATED\n/);
    expect(list.stdout).toMatch(/\nalice\s+user\s+/);
    // OPENTINKER_API_KEY overrides the saved admin key.
    expect(JSON.parse(asAlice.stdout)).toMatchObject({ name: 'alice', role: 'user' });
    expect(forbidden.code).toBe(1);
    expect(forbidden.stderr).toContain("(this needs an admin's API key)");

    const key = await cli(['keys', 'create', 'laptop']);
    expect(key.stdout).toMatch(/Key \(shown only this once; store it now\):\n\n {2}otk_/);
    // The same key in the Tinker SDK's form, which signs in as the same user.
    const plain = /\n {2}(otk_\S+)\n/.exec(key.stdout)![1];
    expect(key.stdout).toContain(`The same key for the Tinker SDK (api_key=, TINKER_API_KEY):\n\n  tml-${plain}\n`);
    const asTinker = await cli(['users', 'me', '--json'], { env: { OPENTINKER_API_KEY: `tml-${plain}` } });
    expect(JSON.parse(asTinker.stdout)).toMatchObject({ name: 'admin' });
    const json = JSON.parse((await cli(['keys', 'create', 'ci', '--json'])).stdout);
    expect(json.tinker_key).toBe(`tml-${json.key}`);
    expect((await cli(['keys', 'list'])).stdout).toMatch(/\n\S+\s+laptop\s+otk_/);
    const revoked = await cli(['keys', 'revoke', 'laptop', '--json']);
    expect(JSON.parse(revoked.stdout)).toMatchObject({ name: 'laptop', revoked_at: expect.any(String) });
    const again = await cli(['keys', 'revoke', 'laptop']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('No active key is named "laptop"');
  });

  it('lists and shows environments, naming the known ones for an unknown id', async () => {
    const [list, show, unknown] = await Promise.all([cli(['envs', 'list']), cli(['envs', 'show', 'gomoku']), cli(['envs', 'show', 'gomokku'])]);
    expect(list.stdout).toMatch(/\nmath\s+\S+\s+loaded\s+single/);
    expect(show.stdout).toContain('Config:');
    expect(show.stdout).toMatch(/Turns: multi/);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('opentinker: Unknown environment gomokku (known: gomoku, math, math-tool)\n');
  });

  it('submits a YAML job and watches it to the end with plain lines and a summary, then reads its output', async () => {
    writeFileSync(join(work, 'job.yaml'), 'kind: sleep\nname: cli-demo\nsteps: 3\nstep_seconds: 0.02\n');
    const watch = await cli(['jobs', 'submit', '--config', 'job.yaml', '--watch', '--logs']);
    expect(watch.code).toBe(0);
    const [first, ...lines] = watch.stdout.trim().split('\n');
    const id = /^Submitted job (\S+) \(sleep "cli-demo"\)\.$/.exec(first)![1];
    expect(lines[0]).toBe('state queued');
    expect(lines).toEqual(expect.arrayContaining(['state running', 'step 3/3: tick']));
    expect(lines).toContainEqual(expect.stringMatching(/^progress 3\/3 tick \| step_fraction 1 · elapsed_seconds [\d.]+$/));
    expect(lines.filter((l) => /^artifact result\.json \(\d+ B\)$/.test(l))).toHaveLength(1);
    // Metrics are not printed per step without a terminal: the last progress line and the summary have them.
    expect(lines.filter((l) => l.startsWith('metrics step '))).toHaveLength(0);
    expect(lines[lines.length - 4]).toBe('state succeeded');
    expect(lines[lines.length - 3]).toMatch(new RegExp(`^Job ${id} "cli-demo" succeeded in \\S+ \\(3/3 steps\\)$`));
    expect(lines[lines.length - 1]).toMatch(/^ {2}artifacts {2}result\.json \(\d+ B\)$/);

    const json = await cli(['jobs', 'watch', id.slice(0, 8), '--json']);
    const events = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events[events.length - 2]).toEqual({ type: 'end', data: { state: 'succeeded' } });
    expect(events[events.length - 1]).toMatchObject({ type: 'summary', job: { id, state: 'succeeded' } });

    const [show, logs, follow, metrics, artifacts, list] = await Promise.all([
      cli(['jobs', 'show', id]),
      cli(['jobs', 'logs', id, '--tail', '3']),
      cli(['jobs', 'logs', id, '--follow']),
      cli(['jobs', 'metrics', id]),
      cli(['jobs', 'artifacts', id, '--json']),
      cli(['jobs', 'list', '--state', 'succeeded']),
    ]);
    expect(show.stdout).toMatch(/^id\s+\S+\nname\s+cli-demo\nkind\s+sleep\nstate\s+succeeded\n/);
    expect(show.stdout).toContain('"step_seconds": 0.02');
    expect(logs.stdout.split('\n').slice(0, 2)).toEqual(['step 2/3: tick', 'step 3/3: tick']);
    // --follow prints the whole output from the event stream and returns once the job has ended.
    expect(follow.code).toBe(0);
    expect(follow.stdout).toBe((await t.request('GET', `/v1/jobs/${id}/logs`)).text);
    expect(metrics.stdout.split('\n')[0]).toMatch(/^STEP\s+[A-Z_]+/);
    expect(metrics.stdout.trim().split('\n')).toHaveLength(4);
    const [artifact] = JSON.parse(artifacts.stdout);
    expect(list.stdout).toContain(id);

    const download = await cli(['jobs', 'download', id, 'result.json']);
    expect(download.stdout).toBe(`Saved result.json (${artifact.size} B) to result.json\n`);
    expect(JSON.parse(readFileSync(join(work, 'result.json'), 'utf8'))).toMatchObject({ steps: 3 });
    const exists = await cli(['jobs', 'download', id, 'result.json']);
    expect(exists.code).toBe(2);
    expect(exists.stderr).toContain('result.json exists; pass --force');
    expect((await cli(['jobs', 'download', id, 'result.json', '-o', '-'])).stdout).toBe(readFileSync(join(work, 'result.json'), 'utf8'));
  });

  it('explains refused specs, malformed arguments and an unreachable server with their exit codes', async () => {
    const closed = await closedPort();
    const [invalid, badYaml, badState, badOption, badLimit, notAnId, unreachable, jsonError, tailFollow] = await Promise.all([
      cli(['jobs', 'submit', '-c', '-'], { input: '{"kind": "sleep", "resources": {"tpus": 1}}' }),
      cli(['jobs', 'submit', '-c', '-'], { input: 'kind: [sleep' }),
      cli(['jobs', 'list', '--state', 'running,runing']),
      cli(['jobs', 'list', '--colour']),
      cli(['jobs', 'list', '--limit', 'lots']),
      cli(['jobs', 'show', 'not/an-id']),
      cli(['jobs', 'list'], { env: { OPENTINKER_URL: `http://127.0.0.1:${closed}`, OPENTINKER_API_KEY: t.adminKey } }),
      cli(['jobs', 'show', '00000000-0000-4000-8000-000000000000', '--json']),
      cli(['jobs', 'logs', '00000000-0000-4000-8000-000000000000', '--tail', '5', '--follow']),
    ]);
    expect([invalid.code, invalid.stderr]).toEqual([1, 'opentinker: Unknown field resources.tpus\n']);
    expect(badYaml.code).toBe(2);
    expect(badYaml.stderr).toMatch(/^opentinker: stdin is not valid YAML or JSON: .*line 1/);
    expect([badState.code, badState.stderr]).toEqual([2, 'opentinker: Unknown state "runing" in --state (known: queued, starting, running, succeeded, failed, cancelled)\n']);
    expect(badOption.code).toBe(2);
    expect(badOption.stderr).toContain("unknown option '--colour'");
    expect([badLimit.code, badLimit.stderr]).toEqual([2, 'opentinker: --limit must be a whole number from 1 to 100, got "lots"\n']);
    expect(notAnId.code).toBe(2);
    expect(notAnId.stderr).toContain('"not/an-id" is not a job id');
    expect(unreachable.code).toBe(3);
    expect(unreachable.stderr).toContain(`Cannot reach the OpenTinker server at http://127.0.0.1:${closed} (ECONNREFUSED)`);
    expect(tailFollow.code).toBe(2);
    expect(tailFollow.stderr).toContain('--tail and --follow cannot be combined');
    expect(jsonError.code).toBe(1);
    expect(JSON.parse(jsonError.stderr)).toEqual({
      error: { code: 'OT_ERR_NOT_FOUND', message: expect.stringContaining('not found'), field: 'id', exit_code: 1 },
    });
  });

  it('without a terminal, prints progress at a bounded rate: a line every few seconds and at each state, never one per step', async () => {
    const submitted = await cli(['jobs', 'submit', '-c', '-', '--json'], { input: '{"kind":"sleep","steps":400,"step_seconds":0.01}' });
    const id: string = JSON.parse(submitted.stdout).id;
    const started = Date.now();
    const watch = await cli(['jobs', 'watch', id]);
    const seconds = (Date.now() - started) / 1000;
    expect(watch.code).toBe(0);
    const lines = watch.stdout.trim().split('\n');
    const progress = lines.filter((l) => l.startsWith('progress '));
    // 400 steps, 800 reports: the first, one per 5 s of watching, and the last before the final state.
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.length).toBeLessThanOrEqual(3 + Math.ceil(seconds / 5));
    expect(progress.at(-1)).toMatch(/^progress 400\/400 tick \| step_fraction 1 · elapsed_seconds [\d.]+$/);
    expect(lines.indexOf(progress.at(-1)!)).toBeLessThan(lines.indexOf('state succeeded'));
    expect(lines.every((l) => l.length <= 200)).toBe(true);
  });

  it('stops watching on Ctrl-C without a terminal, leaving the job running; then cancels it', async () => {
    const submitted = await cli(['jobs', 'submit', '-c', '-', '--json'], { input: '{"kind":"sleep","steps":1000,"step_seconds":0.05}' });
    const id: string = JSON.parse(submitted.stdout).id;
    const child = spawn(process.execPath, [BIN, 'jobs', 'watch', id], { env: cliEnv(), cwd: work });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((r) => child.on('close', r));
    await new Promise<void>((resolve) =>
      child.stdout.on('data', (d) => {
        stdout += d;
        if (/progress ([2-9]|[1-9]\d+)\/1000/.test(stdout)) resolve();
      }),
    );
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr).toBe(`Stopped watching job ${id}; it keeps running (opentinker jobs watch ${id}).\n`);
    expect((await t.request('GET', `/v1/jobs/${id}`)).body.state).toBe('running');

    const cancel = await cli(['jobs', 'cancel', id, '--wait']);
    expect(cancel.code).toBe(0);
    expect(cancel.stdout).toBe(`Job ${id} cancelled.\n`);
  });

  (existsSync('/usr/bin/script') ? it : it.skip)('on a terminal, draws a progress line and asks on Ctrl-C whether to cancel the job', async () => {
    const submitted = await cli(['jobs', 'submit', '-c', '-', '--json'], { input: '{"kind":"sleep","steps":1000,"step_seconds":0.05}' });
    const id: string = JSON.parse(submitted.stdout).id;
    // util-linux `script` runs the command on a pseudo-terminal; what we write is what a person types. `exec`, so
    // no shell stands between: Ctrl-C would signal the shell too, and a shell dying of it ends `script` with 130.
    const child = spawn('/usr/bin/script', ['-qefc', `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} jobs watch ${id}`, '/dev/null'], {
      env: { ...cliEnv(), COLUMNS: '100', LINES: '30' },
      cwd: work,
    });
    let out = '';
    const seen = (text: string) =>
      new Promise<void>((resolve) => {
        const check = () => out.includes(text) && resolve();
        child.stdout.on('data', check);
        check();
      });
    child.stdout.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.on('close', r));
    await seen('/1000 ');
    child.stdin.write('\x03');
    await seen(`Cancel job ${id}? [y/N]`);
    child.stdin.write('y\r');
    expect(await exited).toBe(1);
    child.stdin.end();
    expect(out).toMatch(/\r\x1b\[Krunning {2}[█░]{20} {2}\d+\/1000 \d+%/);
    expect(out).toContain(`Cancelling job ${id}; waiting for it to stop`);
    expect(out).toMatch(new RegExp(`Job ${id} cancelled in \\S+ \\(\\d+/1000 steps\\)`));
    expect((await waitForState(t, id, ['cancelled'])).state).toBe('cancelled');
  });

  (existsSync('/usr/bin/script') ? it : it.skip)('on a terminal, asks for the key at login without echoing it', async () => {
    const otherHome = mkdtempSync(join(tmpdir(), 'cli-home-tty-'));
    try {
      const child = spawn('/usr/bin/script', ['-qefc', `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} login --url ${url}`, '/dev/null'], {
        env: { ...cliEnv(), HOME: otherHome },
      });
      let out = '';
      const prompted = new Promise<void>((resolve) =>
        child.stdout.on('data', (d) => {
          out += d;
          if (out.includes(`API key for ${url}: `)) resolve();
        }),
      );
      const exited = new Promise<number | null>((r) => child.on('close', r));
      await prompted;
      child.stdin.write(`${aliceKey}\r`);
      expect(await exited).toBe(0);
      child.stdin.end();
      expect(out).toContain(`Logged in to ${url} as alice (user)`);
      expect(out).not.toContain(aliceKey);
      expect(JSON.parse(readFileSync(join(otherHome, '.opentinker', 'credentials'), 'utf8')).key).toBe(aliceKey);
    } finally {
      rmSync(otherHome, { recursive: true, force: true });
    }
  });

  it('logs out', async () => {
    expect((await cli(['logout'])).stdout).toBe(`Logged out (removed ${join(home, '.opentinker', 'credentials')}).\n`);
    expect((await cli(['users', 'me'])).code).toBe(4);
    expect((await cli(['logout', '--json'])).stdout).toContain('"logged_out": false');
  });
});

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}
