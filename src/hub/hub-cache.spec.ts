import { inspectHfModelDir } from '@opentinker/engine';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeHub, type FakeHub } from '../../test/support/fake-hub';
import { tinyHubModelFiles } from '../../test/support/tiny-hub-model';
import { HubCache } from './hub-cache';
import { parseHubRef } from './hub-ref';
import type { HubSettings } from './hub-settings';

const REPO = 'tiny-org/tiny-chat';
const SLOW = 120_000;

describe('HubCache against a fake Hub', () => {
  let hub: FakeHub;
  let files: Record<string, Buffer>;
  let cacheDir: string;
  const settings = (over: Partial<HubSettings> = {}): HubSettings => ({
    cacheDir,
    endpoint: hub.url,
    token: null,
    offline: false,
    maxDownloadBytes: 1024 ** 3,
    operatorRepos: [],
    ...over,
  });
  const blobRequests = () => hub.requests.filter((r) => r.path.includes('/resolve/') || r.path.startsWith('/cdn/'));

  beforeAll(async () => {
    files = await tinyHubModelFiles();
    const v2 = { ...files, 'config.json': Buffer.from(files['config.json'].toString().replace('"rms_norm_eps"', '"_v": 2, "rms_norm_eps"')) };
    const evil = { 'ok.txt': Buffer.from('ok'), '../../escape.txt': Buffer.from('out'), 'a/../../b.txt': Buffer.from('out') };
    hub = await startFakeHub([
      { type: 'model', id: REPO, revisions: { main: files, v2 } },
      { type: 'dataset', id: 'evil/data', revisions: { main: evil } },
    ]);
  }, SLOW);
  afterAll(() => hub.close());
  beforeEach(() => {
    cacheDir = mkdtempSync(join(tmpdir(), 'hub-cache-'));
    hub.requests.length = 0;
    hub.token = null;
  });
  afterEach(() => rmSync(cacheDir, { recursive: true, force: true }));

  it(
    'downloads the model files once per commit in huggingface_hub layout, then answers from the cache',
    async () => {
      const logs: string[] = [];
      const cache = new HubCache(settings());
      const first = await cache.resolve(parseHubRef(`hf:${REPO}`), { log: (l) => logs.push(l) });
      const commit = hub.commitOf('model', REPO, 'main');
      expect(first.commit).toBe(commit);
      expect(first.dir).toBe(join(cacheDir, 'models--tiny-org--tiny-chat', 'snapshots', commit));
      expect(first.downloadedBytes).toBeGreaterThan(0);
      // Only safetensors, config and tokenizer files: no README, .bin or subfolders.
      const fetched = readdirSync(first.dir).sort();
      expect(fetched).toEqual(
        Object.keys(files)
          .filter((f) => !['README.md', 'pytorch_model.bin', 'onnx/model.onnx'].includes(f))
          .sort(),
      );
      expect(fetched).toContain('model.safetensors');
      expect(readFileSync(join(cacheDir, 'models--tiny-org--tiny-chat', 'refs', 'main'), 'utf8')).toBe(commit);
      // Snapshot entries are relative links into blobs/, named by checksum (sha256 for LFS files).
      const link = readlinkSync(join(first.dir, 'model.safetensors'));
      expect(link).toMatch(/^\.\.\/\.\.\/blobs\/[0-9a-f]{64}$/);
      expect(lstatSync(join(first.dir, 'config.json')).isSymbolicLink()).toBe(true);
      for (const f of fetched) expect(readFileSync(join(first.dir, f)).equals(files[f])).toBe(true);
      // The LFS file came through the 302 to the "CDN"; the small ones straight from resolve/.
      expect(hub.requests.some((r) => r.path.startsWith('/cdn/'))).toBe(true);
      expect((await inspectHfModelDir(first.dir)).config.model_type).toBe('llama');
      expect(logs.join('\n')).toMatch(/fetching \d+ file\(s\) of hf:tiny-org\/tiny-chat/);

      // Another process (a new cache object): one revision lookup, no file requests.
      hub.requests.length = 0;
      const again = await new HubCache(settings()).resolve(parseHubRef(`hf:${REPO}@main`));
      expect(again).toMatchObject({ commit, dir: first.dir, downloadedBytes: 0 });
      expect(blobRequests()).toEqual([]);
      expect(hub.requests.map((r) => r.path)).toEqual([`/api/models/${REPO}/revision/main`]);
      // By commit sha: nothing asked at all.
      hub.requests.length = 0;
      await new HubCache(settings()).resolve(parseHubRef(`hf:${REPO}@${commit}`));
      expect(hub.requests).toEqual([]);

      // Another revision shares the unchanged blobs: only its new config.json is fetched.
      const v2 = await new HubCache(settings()).resolve(parseHubRef(`hf:${REPO}@v2`));
      expect(v2.commit).toBe(hub.commitOf('model', REPO, 'v2'));
      expect(blobRequests().map((r) => r.path)).toEqual([`/${REPO}/resolve/${v2.commit}/config.json`]);
      expect(readlinkSync(join(v2.dir, 'model.safetensors'))).toBe(link);
    },
    SLOW,
  );

  it(
    'resumes an interrupted download with a Range request, in the same pull and in the next one',
    async () => {
      const size = files['model.safetensors'].length;
      const logs: string[] = [];
      hub.cutAfter.set('model.safetensors', 1000);
      const snap = await new HubCache(settings()).resolve(parseHubRef(`hf:${REPO}`), { log: (l) => logs.push(l) });
      const cdn = () => hub.requests.filter((r) => r.path.startsWith('/cdn/')).map((r) => r.range);
      expect(cdn()).toEqual([null, 'bytes=1000-']);
      expect(readFileSync(join(snap.dir, 'model.safetensors')).equals(files['model.safetensors'])).toBe(true);
      expect(logs.join('\n')).toMatch(/hub: model\.safetensors: terminated; trying again \(2\/4\)\nhub: resuming model\.safetensors at 1\.0 KiB of 3\.2 MiB/);
      // Each byte was fetched once over the two tries.
      expect(snap.downloadedBytes).toBe(snap.files.reduce((a, f) => a + f.size, 0));

      // A process killed mid-download leaves `<blob>.incomplete` (and maybe its lock): the next pull goes on from there.
      rmSync(cacheDir, { recursive: true, force: true });
      const sha = snap.files.find((f) => f.path === 'model.safetensors')!.oid;
      const blobs = join(cacheDir, 'models--tiny-org--tiny-chat', 'blobs');
      mkdirSync(blobs, { recursive: true });
      writeFileSync(join(blobs, `${sha}.incomplete`), files['model.safetensors'].subarray(0, size - 5000));
      writeFileSync(join(blobs, `${sha}.lock`), `${hostname()} 999999999\n`);
      hub.requests.length = 0;
      const resumed = await new HubCache(settings()).resolve(parseHubRef(`hf:${REPO}`));
      expect(cdn()).toEqual([`bytes=${size - 5000}-`]);
      expect(readFileSync(join(resumed.dir, 'model.safetensors')).equals(files['model.safetensors'])).toBe(true);
      expect(readdirSync(blobs).filter((b) => b.endsWith('.incomplete') || b.endsWith('.lock'))).toEqual([]);
    },
    SLOW,
  );

  it(
    'refuses a file whose bytes do not match the checksum the Hub lists, and keeps nothing of it',
    async () => {
      const bad = Buffer.from(files['model.safetensors']);
      bad[bad.length - 1] ^= 0xff;
      hub.corrupt.set('model.safetensors', bad);
      try {
        await expect(new HubCache(settings()).resolve(parseHubRef(`hf:${REPO}`))).rejects.toMatchObject({
          code: 'OT_ERR_MODEL_LOAD_FAILED',
          message: expect.stringMatching(/model\.safetensors failed its checksum \(its sha256 is [0-9a-f]{64}, the Hub lists [0-9a-f]{64}\); the file was not kept/),
        });
      } finally {
        hub.corrupt.delete('model.safetensors');
      }
      const blobs = readdirSync(join(cacheDir, 'models--tiny-org--tiny-chat', 'blobs'));
      const sha = hub.requests.find((r) => r.path.startsWith('/cdn/'))!.path.slice(5);
      expect(blobs.filter((b) => b.startsWith(sha))).toEqual([]);
      expect(existsSync(join(cacheDir, 'models--tiny-org--tiny-chat', 'snapshots', hub.commitOf('model', REPO, 'main'), 'model.safetensors'))).toBe(false);

      // A small (git-sha1) file served with other bytes is refused by its ETag before a byte is written.
      hub.corrupt.set('config.json', Buffer.from('{}'));
      try {
        rmSync(cacheDir, { recursive: true, force: true });
        await expect(new HubCache(settings()).resolve(parseHubRef(`hf:${REPO}`))).rejects.toMatchObject({
          code: 'OT_ERR_MODEL_LOAD_FAILED',
          message: expect.stringMatching(/config\.json failed its checksum \(the Hub's ETag is [0-9a-f]{40}, its listing says [0-9a-f]{40}\)/),
        });
        expect(readdirSync(join(cacheDir, 'models--tiny-org--tiny-chat', 'blobs')).filter((b) => b.endsWith('.incomplete'))).toEqual([]);
      } finally {
        hub.corrupt.delete('config.json');
      }
    },
    SLOW,
  );

  it(
    'offline (HF_HUB_OFFLINE) uses the cache only, and says how to fill it when the repo is missing',
    async () => {
      await expect(new HubCache(settings({ offline: true })).resolve(parseHubRef(`hf:${REPO}`))).rejects.toMatchObject({
        code: 'OT_ERR_MODEL_NOT_FOUND',
        message: expect.stringMatching(/not in the Hub cache at .* offline \(HF_HUB_OFFLINE\): run `opentinker models pull tiny-org\/tiny-chat`/),
      });
      expect(hub.requests).toEqual([]);
      const online = await new HubCache(settings()).resolve(parseHubRef(`hf:${REPO}`));
      hub.requests.length = 0;
      const offline = await new HubCache(settings({ offline: true })).resolve(parseHubRef(`hf:${REPO}`));
      expect(offline).toMatchObject({ commit: online.commit, dir: online.dir, downloadedBytes: 0 });
      expect(hub.requests).toEqual([]);
      // A revision never pulled here is not guessed.
      await expect(new HubCache(settings({ offline: true })).resolve(parseHubRef(`hf:${REPO}@v2`))).rejects.toMatchObject({ code: 'OT_ERR_MODEL_NOT_FOUND' });
    },
    SLOW,
  );

  it(
    'uses a snapshot huggingface_hub wrote (no listing of ours) when offline',
    async () => {
      const commit = 'a'.repeat(40);
      const storage = join(cacheDir, 'models--py--model');
      mkdirSync(join(storage, 'refs'), { recursive: true });
      writeFileSync(join(storage, 'refs', 'main'), commit);
      mkdirSync(join(storage, 'snapshots', commit), { recursive: true });
      for (const f of ['config.json', 'model.safetensors', 'tokenizer.json']) writeFileSync(join(storage, 'snapshots', commit, f), files[f]);
      const snap = await new HubCache(settings({ offline: true })).resolve(parseHubRef('hf:py/model'));
      expect(snap.dir).toBe(join(storage, 'snapshots', commit));
      expect(snap.files.map((f) => f.path).sort()).toEqual(['config.json', 'model.safetensors', 'tokenizer.json']);
    },
    SLOW,
  );

  it(
    "refuses a repo larger than the operator's limit, naming the size and the setting",
    async () => {
      await expect(new HubCache(settings({ maxDownloadBytes: 1000 })).resolve(parseHubRef(`hf:${REPO}`))).rejects.toMatchObject({
        code: 'OT_ERR_LIMIT_EXCEEDED',
        field: 'model.path',
        message: expect.stringMatching(
          /hf:tiny-org\/tiny-chat is [\d.]+ (KiB|MiB) \(\d+ bytes in \d+ files\), more than this server allows to download \(setting hub_max_download_bytes=1000/,
        ),
      });
      expect(blobRequests()).toEqual([]);
      await expect(new HubCache(settings({ maxDownloadBytes: 0 })).resolve(parseHubRef(`hf:${REPO}`))).rejects.toMatchObject({
        code: 'OT_ERR_LIMIT_EXCEEDED',
        message: expect.stringMatching(/downloads are off here/),
      });
    },
    SLOW,
  );

  it(
    'takes turns on one blob: concurrent pulls download each file once',
    async () => {
      const [a, b] = await Promise.all([new HubCache(settings()).resolve(parseHubRef(`hf:${REPO}`)), new HubCache(settings()).resolve(parseHubRef(`hf:${REPO}`))]);
      expect(a.dir).toBe(b.dir);
      const cdn = hub.requests.filter((r) => r.path.startsWith('/cdn/'));
      expect(cdn).toHaveLength(1);
      expect(a.downloadedBytes + b.downloadedBytes).toBe(
        Object.entries(files)
          .filter(([p]) => a.files.some((f) => f.path === p))
          .reduce((n, [, d]) => n + d.length, 0),
      );
    },
    SLOW,
  );

  it(
    'sends HF_TOKEN to the Hub but not to the CDN it redirects to, and explains a refusal',
    async () => {
      hub.token = 'hf_secret';
      await expect(new HubCache(settings()).resolve(parseHubRef(`hf:${REPO}`))).rejects.toMatchObject({
        code: 'OT_ERR_MODEL_NOT_FOUND',
        message: expect.stringMatching(/refused access \(HTTP 401\).*HF_TOKEN/),
      });
      hub.requests.length = 0;
      await new HubCache(settings({ token: 'hf_secret' })).resolve(parseHubRef(`hf:${REPO}`));
      const [toHub, toCdn] = [hub.requests.filter((r) => !r.path.startsWith('/cdn/')), hub.requests.filter((r) => r.path.startsWith('/cdn/'))];
      expect(toHub.length).toBeGreaterThan(2);
      expect(toHub.every((r) => r.auth === 'Bearer hf_secret')).toBe(true);
      expect(toCdn).toHaveLength(1);
      expect(toCdn[0].auth).toBeNull();
    },
    SLOW,
  );

  it(
    'says when a repo, a revision or the Hub itself is not there',
    async () => {
      await expect(new HubCache(settings()).resolve(parseHubRef('hf:nobody/nothing'))).rejects.toMatchObject({
        code: 'OT_ERR_MODEL_NOT_FOUND',
        message: expect.stringMatching(/no such model repo or revision on http/),
      });
      await expect(new HubCache(settings()).resolve(parseHubRef(`hf:${REPO}@nope`))).rejects.toMatchObject({ code: 'OT_ERR_MODEL_NOT_FOUND' });
      await expect(new HubCache(settings({ endpoint: 'http://127.0.0.1:1' })).resolve(parseHubRef(`hf:${REPO}`))).rejects.toMatchObject({
        code: 'OT_ERR_MODEL_UNAVAILABLE',
        message: expect.stringMatching(/cannot reach the Hub at http:\/\/127\.0\.0\.1:1 .*HF_HUB_OFFLINE=1/),
      });
    },
    SLOW,
  );

  it(
    'never writes outside the snapshot folder for a listed path with ".." segments',
    async () => {
      const snap = await new HubCache(settings()).resolve(parseHubRef('hf:datasets/evil/data'), { select: () => true });
      expect(snap.files.map((f) => f.path)).toEqual(['ok.txt']);
      expect(readdirSync(cacheDir)).toEqual(['datasets--evil--data']);
      expect(readdirSync(join(cacheDir, 'datasets--evil--data')).sort()).toEqual(['.opentinker', 'blobs', 'refs', 'snapshots']);
    },
    SLOW,
  );

  it(
    'answers a cached snapshot without asking the Hub: by branch, tag or commit, none while a file is missing',
    async () => {
      const cache = new HubCache(settings());
      expect(await cache.cachedSnapshot(parseHubRef(`hf:${REPO}`))).toBeNull();
      const snap = await new HubCache(settings()).resolve(parseHubRef(`hf:${REPO}`));
      hub.requests.length = 0;
      expect(await cache.cachedSnapshot(parseHubRef(`hf:${REPO}`))).toMatchObject({ commit: snap.commit, dir: snap.dir, downloadedBytes: 0 });
      expect(await cache.cachedSnapshot(parseHubRef(`hf:${REPO}@${snap.commit}`))).toMatchObject({ dir: snap.dir });
      expect(await cache.cachedSnapshot(parseHubRef(`hf:${REPO}@v2`))).toBeNull();
      expect(hub.requests).toEqual([]);
      // A pull by another process after this one looked shows at once (no ref kept in memory).
      const v2 = await new HubCache(settings()).resolve(parseHubRef(`hf:${REPO}@v2`));
      expect(await cache.cachedSnapshot(parseHubRef(`hf:${REPO}@v2`))).toMatchObject({ commit: v2.commit });
      // A blob gone (a partial or removed download): not cached.
      const blob = join(snap.dir, readlinkSync(join(snap.dir, 'model.safetensors')));
      rmSync(blob);
      expect(await cache.cachedSnapshot(parseHubRef(`hf:${REPO}@main`))).toBeNull();
      expect(await cache.cachedSnapshot(parseHubRef(`hf:${REPO}@v2`))).toBeNull();
    },
    SLOW,
  );

  it(
    'lists and removes cached repos',
    async () => {
      const cache = new HubCache(settings());
      const snap = await cache.resolve(parseHubRef(`hf:${REPO}`));
      const [entry] = await cache.list();
      expect(entry).toMatchObject({ type: 'model', repo: REPO, refs: { main: snap.commit }, snapshots: [snap.commit], partialBytes: 0 });
      expect(entry.bytes).toBe(snap.files.reduce((a, f) => a + f.size, 0));
      expect(await cache.remove({ type: 'model', repo: REPO })).toBe(true);
      expect(await cache.list()).toEqual([]);
      expect(await cache.remove({ type: 'model', repo: REPO })).toBe(false);
    },
    SLOW,
  );
});
