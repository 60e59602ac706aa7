import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const BIN = join(process.cwd(), 'bin', 'opentinker.js');

describe('the opentinker binary', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'cli-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prepares a GSM8K-style file into the verl layout the math environment loads', async () => {
    const input = join(dir, 'gsm8k.jsonl');
    const output = join(dir, 'train.jsonl');
    writeFileSync(
      input,
      [
        { question: 'Tom has 3 apples and buys 4 more. How many apples?', answer: 'He has 3 + 4 = 7.\n#### 7' },
        { question: 'A shop sells 1,200 pens a day. How many in 2 days?', answer: '1,200 * 2 = 2,400\n#### 2,400' },
        { question: 'No answer here' },
      ]
        .map((r) => JSON.stringify(r))
        .join('\n'),
    );
    const { stdout } = await run(process.execPath, [BIN, 'data', 'prepare', input, output, '--format', 'gsm8k']);
    expect(stdout).toContain('Wrote 2 rows');
    expect(stdout).toContain('skipped 1');
    const rows = readFileSync(output, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows[0]).toMatchObject({ data_source: 'openai/gsm8k', reward_model: { style: 'rule', ground_truth: '7' } });
    expect(rows[0].prompt[0]).toMatchObject({ role: 'user' });
    expect(rows[1].reward_model.ground_truth).toBe('2400');
  });

  it('names the unknown environment and the known ones', async () => {
    await expect(run(process.execPath, [BIN, 'data', 'prepare', 'a', 'b', '--env', 'nope'])).rejects.toMatchObject({
      stderr: expect.stringMatching(/Unknown environment nope \(known: .*math.*\)/),
    });
  });

  it('refuses a bad setting with its name before starting', async () => {
    await expect(run(process.execPath, [BIN, 'serve'], { env: { ...process.env, OPENTINKER_PORT: 'eighty' } })).rejects.toMatchObject({
      stderr: expect.stringContaining('Invalid configuration: port'),
    });
  });
});
