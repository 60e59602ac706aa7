import { startFakeWandb, type FakeWandb } from '../../test/support/fake-wandb';
import { unusedPort } from '../../test/support/unused-port';
import { WandbStream, type WandbStreamOptions } from './wandb-stream';

const KEY = 'local-0123456789abcdef0123456789abcdef01234567';

const row = (step: number, extra: Record<string, number> = {}) => ({
  'reward/mean': step / 10,
  global_step: step,
  ...extra,
  _step: step,
  _runtime: step * 0.5,
  _timestamp: 1.7e9 + step,
});

function streamTo(baseUrl: string, logs: string[], over: Partial<WandbStreamOptions> = {}): WandbStream {
  return new WandbStream({
    baseUrl,
    apiKey: KEY,
    project: 'ot-test',
    runId: 'abcd1234',
    displayName: 'loggers',
    jobType: 'train',
    tags: ['opentinker', 'job:1'],
    config: { batch_size: 2, rollout: { max_new_tokens: 4 } },
    host: 'worker-1',
    resume: false,
    fetch,
    log: (line) => logs.push(line),
    syncHint: 'wandb sync the offline run',
    intervalMs: 20,
    backoff: { minMs: 10, maxMs: 40 },
    ...over,
  });
}

/** Waits until the fake server has had `n` file-stream requests. */
async function waitForRequests(w: FakeWandb, n: number): Promise<void> {
  for (let i = 0; i < 200 && (w.runs.get('abcd1234')?.fileStream.length ?? 0) < n; i++) await new Promise((r) => setTimeout(r, 10));
  expect(w.runs.get('abcd1234')!.fileStream.length).toBeGreaterThanOrEqual(n);
}

/** What the fake server holds of the run's history, parsed. */
const historyOf = (w: FakeWandb, run = 'abcd1234') => (w.runs.get(run)?.files['wandb-history.jsonl'] ?? []).map((l) => JSON.parse(l) as Record<string, number>);

describe('WandbStream against a fake W&B server', () => {
  let w: FakeWandb;
  let logs: string[];
  beforeEach(async () => {
    w = await startFakeWandb({ key: KEY });
    logs = [];
  });
  afterEach(() => w.close());

  it('creates the run with UpsertBucket and streams history, summary and console lines at their offsets, then complete', async () => {
    const s = streamTo(w.url, logs);
    s.defineMetrics([{ name: 'global_step' }, { name: 'reward/mean', stepMetric: 'global_step' }]);
    s.output('hello\nsecond line\n');
    for (let step = 0; step < 3; step++) s.history(row(step));
    await new Promise((r) => setTimeout(r, 100));
    for (let step = 3; step < 6; step++) s.history(row(step));
    s.summary({ 'reward/mean': 0.5, _step: 5, _wandb: { runtime: 2 } });
    await s.finish(0, 5_000);

    const run = w.runs.get('abcd1234')!;
    // The first call as wandb-core makes it: no entity (the key's default), the run's fields, the config as {key: {value}}.
    expect(run.upserts[0]).toMatchObject({
      name: 'abcd1234',
      project: 'ot-test',
      entity: null,
      displayName: 'loggers',
      jobType: 'train',
      host: 'worker-1',
      tags: ['opentinker', 'job:1'],
    });
    expect(run.config.batch_size).toEqual({ value: 2 });
    expect(run.config.rollout).toEqual({ value: { max_new_tokens: 4 } });
    expect((run.config._wandb as { value: { m: unknown } }).value.m).toEqual([
      { '1': 'global_step', '6': [3], '7': [] },
      { '1': 'reward/mean', '5': 1, '6': [3], '7': [] },
    ]);
    expect(run.entity).toBe('fake-entity');
    expect(historyOf(w)).toEqual([0, 1, 2, 3, 4, 5].map((s) => row(s)));
    expect(run.gaps).toEqual([]);
    expect(run.files['wandb-summary.json']).toEqual([JSON.stringify({ 'reward/mean': 0.5, _step: 5, _wandb: { runtime: 2 } })]);
    expect(run.files['output.log']).toEqual([expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6} hello$/), expect.stringMatching(/ second line$/)]);
    expect(run.complete).toBe(true);
    expect(run.exitcode).toBe(0);
    // HTTP Basic api:<key> on every call; the last request ends the run.
    const calls = w.requests.filter((r) => r.path !== '/graphql');
    expect(new Set(w.requests.map((r) => r.authorization))).toEqual(new Set([`Basic ${Buffer.from(`api:${KEY}`).toString('base64')}`]));
    expect(calls.at(-1)!.body).toMatchObject({ complete: true, exitcode: 0 });
    expect(calls.map((r) => r.path)).toEqual(calls.map(() => '/files/fake-entity/ot-test/abcd1234/file_stream'));
    expect(logs.join('\n')).toMatch(/streamed and marked finished/);
    expect(logs.join('\n')).not.toContain(KEY);
  });

  it('sends at most once per interval, a heartbeat when idle, and everything at once when the job ends', async () => {
    const s = streamTo(w.url, logs, { intervalMs: 60_000, heartbeatMs: 50 });
    s.history(row(0));
    await waitForRequests(w, 1);
    // Within the interval: new rows wait, empty heartbeats keep the run alive.
    s.history(row(1));
    s.history(row(2));
    await waitForRequests(w, 3);
    const streams = () => w.runs.get('abcd1234')!.fileStream;
    expect(streams()[0]).toEqual({ files: { 'wandb-history.jsonl': { offset: 0, content: [JSON.stringify(row(0))] } } });
    expect(streams().slice(1)).toEqual(
      streams()
        .slice(1)
        .map(() => ({})),
    );
    const t0 = Date.now();
    await s.finish(0, 5_000);
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(streams().at(-1)).toEqual({ files: { 'wandb-history.jsonl': { offset: 1, content: [row(1), row(2)].map((r) => JSON.stringify(r)) } }, complete: true, exitcode: 0 });
  });

  it('retries 500s with backoff and carries on when W&B answers again', async () => {
    w.fail('file_stream', 500, 2);
    w.fail('graphql', 503, 1);
    const s = streamTo(w.url, logs);
    for (let step = 0; step < 4; step++) s.history(row(step));
    await s.finish(1, 5_000);
    expect(historyOf(w)).toEqual([0, 1, 2, 3].map((s) => row(s)));
    expect(w.runs.get('abcd1234')!.exitcode).toBe(1);
    expect(logs.join('\n')).toMatch(/UpsertBucket: W&B at http:\/\/127\.0\.0\.1:\d+ answered HTTP 503; retrying/);
    expect(logs.join('\n')).toMatch(/file stream: W&B at .* answered HTTP 500; retrying/);
    expect(logs.join('\n')).toMatch(/W&B answers again/);
    expect(logs.join('\n')).toMatch(/marked failed/);
  });

  it('stops at a 401 without retrying and says how to upload the offline run', async () => {
    const s = streamTo(w.url, logs, { apiKey: 'wrong-key-0123456789' });
    s.history(row(0));
    await s.finish(0, 5_000);
    expect(w.requests.filter((r) => r.path === '/graphql')).toHaveLength(1);
    expect(w.runs.size).toBe(0);
    expect(logs.at(-1)).toMatch(
      /streaming to W&B stopped: UpsertBucket: W&B refused the API key \(HTTP 401\); check WANDB_API_KEY\. Not streamed: 1 history row \(_step 0\)\. Nothing is lost: wandb sync/,
    );
    expect(logs.join('\n')).not.toContain('wrong-key-0123456789');
  });

  it('gives up at the end of the finish wait when W&B is down from the start', async () => {
    const s = streamTo(`http://127.0.0.1:${await unusedPort()}`, logs);
    for (let step = 0; step < 3; step++) s.history(row(step));
    const t0 = Date.now();
    await s.finish(0, 300);
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(logs[0]).toMatch(/UpsertBucket: W&B at .* is unreachable \(ECONNREFUSED\); retrying/);
    expect(logs.at(-1)).toMatch(
      /stopped: W&B did not take the end of the run within 0\.3 s \(setting wandb_finish_seconds\); the last try: W&B is unreachable \(ECONNREFUSED\)\. Not streamed: 3 history rows \(_step 0–2\)/,
    );
  });

  it('keeps what reached W&B when the server dies mid-run, and names what did not', async () => {
    const s = streamTo(w.url, logs);
    for (let step = 0; step < 3; step++) s.history(row(step));
    for (let i = 0; i < 100 && historyOf(w).length < 3; i++) await new Promise((r) => setTimeout(r, 20));
    await w.die();
    for (let step = 3; step < 6; step++) s.history(row(step));
    await s.finish(0, 300);
    expect(historyOf(w)).toEqual([0, 1, 2].map((s) => row(s)));
    expect(logs.at(-1)).toMatch(/stopped: .*Not streamed: 3 history rows \(_step 3–5\)\. Nothing is lost/);
  });

  it('caps what waits to be sent: the oldest rows go first, and the log says so', async () => {
    const s = streamTo(`http://127.0.0.1:${await unusedPort()}`, logs, { maxPendingBytes: 1_000 });
    for (let step = 0; step < 50; step++) s.history(row(step));
    await s.finish(0, 100);
    expect(logs.join('\n')).toMatch(
      /not keeping up: more than 1 KiB wait to be sent, so the oldest console lines, then rows, are dropped from streaming \(the offline run keeps them\)/,
    );
    expect(logs.at(-1)).toMatch(/Not streamed: 50 history rows \(_step 0–49\)/);
  });

  it('resumes a run as resume="allow" does: history and console continue at the server\'s counts, older steps are not sent again', async () => {
    const first = streamTo(w.url, logs);
    for (let step = 0; step < 6; step++) first.history(row(step));
    first.output('first attempt\n');
    await first.finish(0, 5_000);
    // The second attempt resumed from its checkpoint at step 3: it carries rows 0–3 and reports 4–7 again.
    const second = streamTo(w.url, logs, { resume: true });
    for (let step = 0; step < 8; step++) second.history(row(step, { attempt: 2 }));
    second.output('second attempt\n');
    await second.finish(0, 5_000);
    const history = historyOf(w);
    expect(history.map((r) => r._step)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(history.slice(6).every((r) => r.attempt === 2)).toBe(true);
    expect(history.slice(0, 6).every((r) => r.attempt === undefined)).toBe(true);
    const run = w.runs.get('abcd1234')!;
    expect(run.files['output.log'].map((l) => l.slice(27))).toEqual(['first attempt', 'second attempt']);
    expect(run.gaps).toEqual([]);
    expect(w.requests.filter((r) => r.operation === 'RunResumeStatus')).toHaveLength(1);
    expect(logs.join('\n')).toMatch(/resuming W&B run abcd1234 at history line 6 \(its last _step is 5\)/);
    expect(logs.join('\n')).toMatch(/already has steps up to 5; this attempt's rows up to there stay in the offline run only/);
  });
});

describe('WandbStream against hostile or odd answers', () => {
  const answering = (res: () => Response) => (async () => res()) as unknown as typeof fetch;

  it('never logs the key, even when the server echoes it back', async () => {
    const logs: string[] = [];
    const echo = `bad request for key ${KEY} (${Buffer.from(`api:${KEY}`).toString('base64')})`;
    const s = streamTo('http://wandb.example', logs, { fetch: answering(() => new Response(echo, { status: 400 })) });
    await s.finish(0, 1_000);
    expect(logs.at(-1)).toMatch(/UpsertBucket: W&B answered HTTP 400: bad request for key \*\*\* \(\*\*\*\)/);
    expect(logs.join('\n')).not.toContain(KEY);
  });

  it('does not follow a redirect (the key would go elsewhere)', async () => {
    const logs: string[] = [];
    const s = streamTo('http://wandb.example', logs, { fetch: answering(() => new Response(null, { status: 302, headers: { location: 'http://evil.example/' } })) });
    await s.finish(0, 1_000);
    expect(logs.at(-1)).toMatch(/W&B redirected to another address \(HTTP 302\)/);
  });

  it('stops on a GraphQL error, an answer without a run, or an answer too large to read', async () => {
    const cases: Array<[() => Response, RegExp]> = [
      [() => Response.json({ errors: [{ message: 'project name is invalid' }] }), /W&B refused UpsertBucket: project name is invalid/],
      [() => Response.json({ data: { upsertBucket: null } }), /UpsertBucket answer names no project and entity/],
      [
        () => Response.json({ data: { upsertBucket: { bucket: { historyLineCount: 0, project: { name: 'p', entity: { name: 'x\nwandb: forged log line' } } } } } }),
        /UpsertBucket answer names no project and entity W&B would accept/,
      ],
      [() => new Response(new Uint8Array(2 * 1024 * 1024)), /answer is larger than 1048576 bytes/],
      // An error nested 100,000 deep, which JSON.stringify would overflow the stack on.
      [() => new Response(`{"errors":[${'['.repeat(100_000)}${']'.repeat(100_000)}]}`), /UpsertBucket: W&B's answer nests deeper than 64 levels/],
    ];
    for (const [answer, reason] of cases) {
      const logs: string[] = [];
      await streamTo('http://wandb.example', logs, { fetch: answering(answer) }).finish(0, 1_000);
      expect(logs.at(-1)).toMatch(reason);
    }
  });
});
