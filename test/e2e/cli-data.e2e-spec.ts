import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestApp, TestApp } from '../support/test-app';
import { runCli, type CliRun } from '../support/cli-process';

const row = (i: number) => ({ prompt: [{ role: 'user', content: `What is ${i} + 1?` }], reward_model: { ground_truth: String(i + 1) } });

/** `opentinker data upload|list|preview|delete`: the real binary (built by `npm run build`) against a server on a real port. */
describe('opentinker data commands', () => {
  let t: TestApp;
  let env: NodeJS.ProcessEnv;
  let work: string;

  const cli = (args: string[]): Promise<CliRun> => runCli(args, { env, cwd: work });

  beforeAll(async () => {
    t = await startTestApp({ worker: false });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    work = mkdtempSync(join(tmpdir(), 'cli-data-'));
    const url = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
    env = { ...process.env, HOME: work, OPENTINKER_URL: url, OPENTINKER_API_KEY: t.adminKey };
  });
  afterAll(async () => {
    await t.close();
    rmSync(work, { recursive: true, force: true });
  });

  it('uploads a file, reports its bad rows, lists, previews and deletes it', async () => {
    writeFileSync(join(work, 'train.jsonl'), [row(1), { prompt: 'no answer' }, row(2)].map((r) => JSON.stringify(r)).join('\n') + '\n');
    const up = await cli(['data', 'upload', 'train.jsonl', '--env', 'math']);
    expect(up.stderr).toBe('');
    expect(up.code).toBe(0);
    const id = /Stored dataset ([0-9a-f-]{36}) "train.jsonl"/.exec(up.stdout)?.[1];
    expect(id).toBeDefined();
    expect(up.stdout).toContain('Rows: 3; usable: 2; bad: 1.');
    expect(up.stdout).toMatch(/2\s+no ground truth/);
    expect(up.stdout).toContain(`environment.dataset=${id}`);

    const list = await cli(['data', 'list']);
    expect(list.stdout).toMatch(new RegExp(`${id}\\s+train\\.jsonl\\s+math\\s+jsonl\\s+3\\s+1`));
    const preview = await cli(['data', 'preview', id!, '--limit', '1', '--json']);
    expect(JSON.parse(preview.stdout).rows).toEqual([{ row: 1, value: row(1) }]);

    expect((await cli(['data', 'delete', id!])).stdout).toContain(`Deleted dataset ${id}.`);
    expect((await cli(['data', 'list'])).stdout).toContain('No datasets.');
  });

  it('prints the report of a refused file and exits 1; names the known environments for a typo', async () => {
    writeFileSync(join(work, 'bad.jsonl'), '{"text": "a"}\n{"text": "b"}\n');
    const refused = await cli(['data', 'upload', 'bad.jsonl', '--env', 'math']);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain('Rows: 2; usable: 0; bad: 2.');
    expect(refused.stderr).toContain('no row is usable');
    const typo = await cli(['data', 'upload', 'bad.jsonl', '--env', 'maths']);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toMatch(/Unknown environment maths \(known: .*math/);
    expect((await cli(['data', 'upload', 'nope.jsonl', '--env', 'math'])).code).toBe(2);
    expect((await cli(['data', 'preview', 'not-an-id'])).code).toBe(2);
  });
});
