import type { DataSource } from 'typeorm';
import { jobRow, jobsFixture, testDatabases, type TestDatabase } from '../../test/support/test-databases';
import { loadConfig } from '../config/app-config';
import type { JobsRepository } from '../jobs/jobs.repository';
import type { SessionCallsRepository } from '../sessions/session-calls.repository';
import type { TinkerRunners } from './tinker-runners.service';
import { TinkerSessions } from './tinker-sessions.service';
import { TinkerRepository } from './tinker.repository';

const RUNNER_OF_GONE = '4f0c3a4e-0000-4000-8000-0000000000a1';
const RUNNER_OF_LIVE = '4f0c3a4e-0000-4000-8000-0000000000a2';
const WAITING = '4f0c3a4e-0000-4000-8000-0000000000b1';

/**
 * The expiry sweep on a real database: a session whose program has gone (no heartbeat) gives its
 * runner's devices up early while a job waits for them, not only after the full timeout.
 */
describe.each(testDatabases('tinker_sessions'))('TinkerSessions sweep (%s)', (_, open) => {
  let database: TestDatabase;
  let db: DataSource;
  let jobs: JobsRepository;
  let repo: TinkerRepository;
  const ended: Array<{ jobId: string; reason: string }> = [];
  const runners = { end: (jobId: string, _owner: string, reason: string) => Promise.resolve(void ended.push({ jobId, reason })) } as unknown as TinkerRunners;
  const calls = { deleteFinished: () => Promise.resolve() } as unknown as SessionCallsRepository;
  const config = loadConfig({}, { tinker_session_timeout_seconds: 120, tinker_session_yield_seconds: 30 });

  beforeAll(async () => {
    database = await open();
    ({ db, repo: jobs } = await jobsFixture(database));
    repo = new TinkerRepository(db);
    const now = Date.now();
    for (const [id, jobId, silentS] of [
      ['gone', RUNNER_OF_GONE, 45],
      ['live', RUNNER_OF_LIVE, 5],
    ] as const) {
      await jobs.insert(jobRow(jobId, 1, { kind: 'tinker', state: 'running' }));
      const heartbeatAt = now - silentS * 1000;
      await repo.insertSession({
        id,
        ownerId: 'u1',
        state: 'active',
        sdkVersion: '0.38.0',
        tags: [],
        userMetadata: null,
        idempotencyKey: null,
        createdAt: 1,
        heartbeatAt,
        endedAt: null,
        endReason: null,
      });
      await repo.insertRunner({ jobId, sessionId: id, ownerId: 'u1', baseKey: '{"preset":"tiny-char"}', createdAt: 1 });
    }
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  const sessions = () => new TinkerSessions(config, repo, runners, calls, jobs);

  it('keeps a session silent past tinker_session_yield_seconds while no job waits (the timeout alone ends it)', async () => {
    await sessions().sweep();
    expect(ended).toEqual([]);
    expect((await repo.findSession('gone'))?.state).toBe('active');
  });

  it('ends it, and its runner, once a job waits for devices; a session that still beats stays', async () => {
    await jobs.insert(jobRow(WAITING, 2, { state: 'queued' }));
    await sessions().sweep();
    expect(ended).toEqual([{ jobId: RUNNER_OF_GONE, reason: expect.stringContaining('tinker_session_yield_seconds') }]);
    expect(await repo.findSession('gone')).toMatchObject({ state: 'expired', endReason: expect.stringMatching(/^no heartbeat for 30 s while a job waited for devices/) });
    expect((await repo.findSession('live'))?.state).toBe('active');
  });
});
