import { parquetWriteBuffer } from 'hyparquet-writer';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, type CliRun } from '../support/cli-process';
import { startFakeHub, type FakeHub } from '../support/fake-hub';
import { tinyHubModelFiles } from '../support/tiny-hub-model';

const SLOW = 120_000;

const parquet = (columns: Record<string, string[]>) =>
  Buffer.from(parquetWriteBuffer({ columnData: Object.entries(columns).map(([name, data]) => ({ name, data, type: 'STRING' as const })) }));

/** A GSM8K-shaped dataset repo: the card declares the `main` config's files; `socratic` must be left alone. */
function gsm8kRepo(): Record<string, Buffer> {
  return {
    'README.md': Buffer.from(
      '---\nconfigs:\n- config_name: main\n  data_files:\n  - split: train\n    path: main/train-*\n  - split: test\n    path: main/test-*\n- config_name: socratic\n  data_files:\n  - split: train\n    path: socratic/train-*\n---\n# GSM8K\n',
    ),
    'main/train-00000-of-00001.parquet': parquet({ question: ['What is 2+3?', 'What is 10*10?', 'No answer here'], answer: ['2+3=5\n#### 5', '#### 1,000', 'none'] }),
    'main/test-00000-of-00001.parquet': parquet({ question: ['What is 1+1?'], answer: ['#### 2'] }),
    'socratic/train-00000-of-00001.parquet': parquet({ question: ['x'], answer: ['#### 1'] }),
  };
}

describe('opentinker models pull|list|rm and data prepare gsm8k against a fake Hub', () => {
  let hub: FakeHub;
  let home: string;
  let work: string;
  let env: NodeJS.ProcessEnv;
  const cli = (args: string[], extra: NodeJS.ProcessEnv = {}): Promise<CliRun> => runCli(args, { env: { ...env, ...extra }, cwd: work });

  beforeAll(async () => {
    hub = await startFakeHub([
      { type: 'model', id: 'tiny-org/tiny-chat', revisions: { main: await tinyHubModelFiles() } },
      { type: 'dataset', id: 'openai/gsm8k', revisions: { main: gsm8kRepo() } },
    ]);
    home = mkdtempSync(join(tmpdir(), 'cli-models-home-'));
    work = mkdtempSync(join(tmpdir(), 'cli-models-work-'));
    env = { PATH: process.env.PATH, HOME: work, OPENTINKER_HOME: home, HF_ENDPOINT: hub.url };
  }, SLOW);
  afterAll(async () => {
    await hub?.close();
    rmSync(home, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  });

  it(
    'pulls a model once, lists it, reads it with model info, and removes it',
    async () => {
      const pulled = await cli(['models', 'pull', 'tiny-org/tiny-chat', '--json']);
      expect(pulled.stderr).toMatch(/hub: fetching/);
      expect(pulled.code).toBe(0);
      const report = JSON.parse(pulled.stdout);
      expect(report).toMatchObject({ repo: 'tiny-org/tiny-chat', type: 'model', revision: 'main', commit: hub.commitOf('model', 'tiny-org/tiny-chat', 'main') });
      expect(report.downloaded_bytes).toBe(report.bytes);
      expect(report.dir).toBe(join(home, 'hub', 'models--tiny-org--tiny-chat', 'snapshots', report.commit));

      hub.requests.length = 0;
      const again = await cli(['models', 'pull', 'hf:tiny-org/tiny-chat']);
      expect(again.stdout).toMatch(/hf:tiny-org\/tiny-chat at [0-9a-f]{40}: \d+ files, [\d.]+ MiB \(all cached\)/);
      expect(hub.requests.filter((r) => r.path.includes('/resolve/') || r.path.startsWith('/cdn/'))).toEqual([]);

      // Offline: from the cache, no request at all.
      hub.requests.length = 0;
      const info = await cli(['model', 'info', 'hf:tiny-org/tiny-chat', '--json'], { HF_HUB_OFFLINE: '1' });
      expect(info.code).toBe(0);
      expect(JSON.parse(info.stdout)).toMatchObject({ modelType: 'llama', dir: report.dir });
      expect(hub.requests).toEqual([]);

      const list = await cli(['models', 'list']);
      expect(list.stdout).toMatch(/^REPO\s+REFS\s+SNAPSHOTS\s+SIZE/);
      expect(list.stdout).toMatch(new RegExp(`hf:tiny-org/tiny-chat\\s+main=${report.commit.slice(0, 12)}\\s+1\\s+[\\d.]+ MiB`));

      expect((await cli(['models', 'rm', 'tiny-org/tiny-chat'])).stdout).toMatch(/Removed hf:tiny-org\/tiny-chat/);
      expect(readdirSync(join(home, 'hub'))).toEqual([]);
      const gone = await cli(['models', 'rm', 'tiny-org/tiny-chat']);
      expect(gone.code).toBe(1);
      expect(gone.stderr).toMatch(/is not in the cache/);
      const bad = await cli(['models', 'pull', '../etc']);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/is not a Hugging Face repo/);
    },
    SLOW,
  );

  it(
    'refuses a pull larger than OPENTINKER_HUB_MAX_DOWNLOAD_BYTES, naming the setting',
    async () => {
      const res = await cli(['models', 'pull', 'tiny-org/tiny-chat'], { OPENTINKER_HUB_MAX_DOWNLOAD_BYTES: '4096' });
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/is [\d.]+ MiB .* more than this server allows to download \(setting hub_max_download_bytes=4096/);
    },
    SLOW,
  );

  it(
    "prepares gsm8k from the Hub the way verl's preprocessing loads it (openai/gsm8k, config main)",
    async () => {
      hub.requests.length = 0;
      const res = await cli(['data', 'prepare', 'gsm8k']);
      expect(res.stderr).toMatch(/hub: fetching 2 file\(s\) of hf:datasets\/openai\/gsm8k/);
      expect(res.code).toBe(0);
      expect(res.stdout).toMatch(/From hf:datasets\/openai\/gsm8k at [0-9a-f]{12}: wrote 2 rows to data\/gsm8k\/train\.jsonl \(skipped 1 .*\), 1 rows to data\/gsm8k\/test\.jsonl/);
      const train = readFileSync(join(work, 'data', 'gsm8k', 'train.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(train.map((r) => r.reward_model.ground_truth)).toEqual(['5', '1000']);
      expect(train[0]).toMatchObject({ data_source: 'openai/gsm8k', ability: 'math', extra_info: { split: 'train', index: 0 } });
      const test = readFileSync(join(work, 'data', 'gsm8k', 'test.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(test).toHaveLength(1);
      expect(test[0].extra_info.split).toBe('test');
      // Only the declared config's files (and the card) were fetched.
      const fetched = hub.requests.filter((r) => r.path.includes('/resolve/')).map((r) => r.path.replace(/^.*\/resolve\/[0-9a-f]+\//, ''));
      expect(fetched.sort()).toEqual(['README.md', 'main/test-00000-of-00001.parquet', 'main/train-00000-of-00001.parquet']);
    },
    SLOW,
  );
});
