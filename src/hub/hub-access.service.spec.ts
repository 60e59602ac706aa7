import type { DataSource } from 'typeorm';
import { jobsFixture, testDatabases, type TestDatabase } from '../../test/support/test-databases';
import type { AppConfig } from '../config/app-config';
import { HubAccessService } from './hub-access.service';

const SHA = 'a'.repeat(40);
const OTHER = 'b'.repeat(40);

/** The `hub_access` records on both databases: who may use what, and each user's Hub bytes. */
describe.each(testDatabases('hub-access'))('HubAccessService (%s)', (_, open) => {
  let database: TestDatabase;
  let db: DataSource;
  let access: HubAccessService;
  const alice = { userId: 'u1', role: 'user' };
  const bob = { userId: 'u2', role: 'user' };
  const snapshot = (repo: string, commit: string, operatorShared = false) => ({ type: 'model' as const, repo, commit, operatorShared });

  beforeAll(async () => {
    database = await open();
    ({ db } = await jobsFixture(database));
    access = new HubAccessService(db, { values: { hub_token_repos: ['shared-org/*'] } } as unknown as AppConfig);
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it("records each user's uses, adds up their downloads, and lets others use only public, listed or operator-pulled snapshots", async () => {
    await access.record('u1', { type: 'model', repo: 'private/secret', commit: SHA, access: 'token', downloadedBytes: 1000 });
    await access.record('u1', { type: 'model', repo: 'private/secret', commit: SHA, access: 'token', downloadedBytes: 0 });
    await access.record('u1', { type: 'model', repo: 'open/model', commit: OTHER, access: 'public', downloadedBytes: 500 });
    await Promise.all([1, 2, 3].map(() => access.record('u2', { type: 'model', repo: 'open/model', commit: SHA, access: 'public', downloadedBytes: 7 })));
    expect(await access.bytesOf('u1')).toBe(1500);
    expect(await access.bytesOf('u2')).toBe(21);

    const cached = [
      snapshot('private/secret', SHA),
      snapshot('open/model', OTHER),
      snapshot('shared-org/base', SHA),
      snapshot('pulled/by-operator', SHA, true),
      snapshot('nobody/used', SHA),
    ];
    const names = async (caller: { userId: string; role: string }) => (await access.filterVisible(caller, cached)).map((s) => s.repo);
    expect(await names(alice)).toEqual(['private/secret', 'open/model', 'shared-org/base', 'pulled/by-operator']);
    expect(await names(bob)).toEqual(['open/model', 'shared-org/base', 'pulled/by-operator']);
    expect(await names({ userId: 'root', role: 'admin' })).toHaveLength(5);
    expect(await access.mayUse(bob, snapshot('private/secret', SHA))).toBe(false);

    // What a job runner of each gets for the repos its spec names.
    expect(await access.grantedTo('u1', [{ type: 'model', repo: 'private/secret' }])).toEqual([`model:private/secret@${SHA}`]);
    expect(await access.grantedTo('u2', [{ type: 'model', repo: 'private/secret' }])).toEqual([]);
    expect(await access.grantedTo('u2', [{ type: 'model', repo: 'open/model' }])).toEqual([`model:open/model@${SHA}`, `model:open/model@${OTHER}`]);
  });
});
