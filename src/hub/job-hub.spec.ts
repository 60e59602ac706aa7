import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeHub, type FakeHub } from '../../test/support/fake-hub';
import { tinyHubModelFiles } from '../../test/support/tiny-hub-model';
import type { HubUse } from './hub-access';
import { HubCache } from './hub-cache';
import { parseHubRef } from './hub-ref';
import type { HubSettings } from './hub-settings';
import { JobHub, type JobHubAccess } from './job-hub';

const SLOW = 120_000;
const OWNER_TOKEN = 'hf_owner';

/** A job's Hub access on its owner's behalf, against the fake Hub (the security suite runs it through a server). */
describe('JobHub', () => {
  let hub: FakeHub;
  let cacheDir: string;
  let commit: string;
  const settings = (over: Partial<HubSettings> = {}): HubSettings => ({
    cacheDir,
    endpoint: hub.url,
    token: 'hf_operator',
    offline: false,
    maxDownloadBytes: 1024 ** 3,
    operatorRepos: [],
    ...over,
  });
  const access = (over: Partial<JobHubAccess> = {}): JobHubAccess => ({ userId: 'bob', admin: false, granted: [], budgetBytes: null, quotaBytes: 0, ...over });
  const jobHub = (s: HubSettings, a: JobHubAccess, uses: HubUse[] = []) => new JobHub(s, a, (u) => uses.push(u));

  beforeAll(async () => {
    hub = await startFakeHub([{ type: 'model', id: 'private/secret', revisions: { main: await tinyHubModelFiles() }, tokens: [OWNER_TOKEN, 'hf_operator'] }]);
    commit = hub.commitOf('model', 'private/secret', 'main');
  }, SLOW);
  afterAll(() => hub.close());
  beforeEach(async () => {
    cacheDir = mkdtempSync(join(tmpdir(), 'job-hub-'));
    // Someone else's private pull is in this worker's cache.
    await new HubCache(settings({ token: OWNER_TOKEN })).resolve(parseHubRef('hf:private/secret'));
    hub.requests.length = 0;
  });
  afterEach(() => rmSync(cacheDir, { recursive: true, force: true }));

  it('serves a cached private snapshot only to a user it is granted to, the operator shared, or who proves access', async () => {
    const ref = parseHubRef(`hf:private/secret@${commit}`);
    await expect(jobHub(settings(), access()).resolve(ref, { token: null })).rejects.toMatchObject({
      code: 'OT_ERR_MODEL_NOT_FOUND',
      message: expect.stringMatching(/or not one this job may read/),
    });
    // The Hub was asked, anonymously: the operator's token never went out for an unlisted repo.
    expect(hub.requests.length).toBeGreaterThan(0);
    expect(hub.requests.filter((r) => r.auth !== null)).toEqual([]);

    hub.requests.length = 0;
    const uses: HubUse[] = [];
    expect((await jobHub(settings(), access({ granted: [`model:private/secret@${commit}`] }), uses).resolve(ref, { token: null })).commit).toBe(commit);
    expect(hub.requests).toEqual([]); // a granted commit is taken from the cache

    const proved = await jobHub(settings(), access(), uses).resolve(ref, { token: OWNER_TOKEN });
    expect(proved).toMatchObject({ commit, downloadedBytes: 0 });
    expect(uses).toEqual([{ type: 'model', repo: 'private/secret', commit, access: 'token', downloadedBytes: 0 }]);

    await new HubCache(settings()).markShared(ref, commit);
    expect((await jobHub(settings(), access()).resolve(ref, { token: null })).commit).toBe(commit);
  });

  it('offline, serves only what the owner may use, and says "not cached" otherwise', async () => {
    const offline = settings({ offline: true });
    const ref = parseHubRef('hf:private/secret');
    await expect(jobHub(offline, access()).resolve(ref, { token: OWNER_TOKEN })).rejects.toMatchObject({ message: expect.stringMatching(/not in the Hub cache .* offline/) });
    expect((await jobHub(offline, access({ granted: [`model:private/secret@${commit}`] })).resolve(ref, { token: null })).commit).toBe(commit);
    expect(hub.requests).toEqual([]);
  });

  it('uses the operator token for listed repos, and stops a download at the owner’s quota before its first byte', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'job-hub-fresh-'));
    try {
      const listed = settings({ cacheDir: fresh, operatorRepos: ['private/*'] });
      await expect(jobHub(listed, access({ budgetBytes: 1000, quotaBytes: 5000 })).resolve(parseHubRef('hf:private/secret'), { token: null })).rejects.toMatchObject({
        code: 'OT_ERR_QUOTA_EXCEEDED',
        message: expect.stringMatching(/needs .* from the Hub, more than your storage quota has left \(1000 bytes of 5000: operator setting storage_quota_bytes/),
      });
      expect(hub.requests.filter((r) => r.path.includes('/resolve/') || r.path.startsWith('/cdn/'))).toEqual([]);
      const uses: HubUse[] = [];
      const got = await jobHub(listed, access(), uses).resolve(parseHubRef('hf:private/secret'), { token: null });
      expect(got.downloadedBytes).toBeGreaterThan(0);
      expect(uses).toEqual([{ type: 'model', repo: 'private/secret', commit, access: 'operator', downloadedBytes: got.downloadedBytes }]);
      expect(hub.requests.filter((r) => !r.path.startsWith('/cdn/')).every((r) => r.auth === 'Bearer hf_operator')).toBe(true);
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  });
});
