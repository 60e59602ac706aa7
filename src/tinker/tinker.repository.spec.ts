import type { DataSource } from 'typeorm';
import { jobRow, jobsFixture, testDatabases, type TestDatabase } from '../../test/support/test-databases';
import { TinkerRepository } from './tinker.repository';

const JOB = '4f0c3a4e-0000-4000-8000-000000000001';

/** The Tinker tables on both databases (PostgreSQL with IT_PG_URL): what the API reads and writes. */
describe.each(testDatabases('tinker'))('TinkerRepository (%s)', (_, open) => {
  let database: TestDatabase;
  let db: DataSource;
  let repo: TinkerRepository;

  beforeAll(async () => {
    database = await open();
    const fixture = await jobsFixture(database);
    db = fixture.db;
    await fixture.repo.insert(jobRow(JOB, 1, { kind: 'tinker' }));
    repo = new TinkerRepository(db);
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  const session = (id: string, heartbeatAt: number, key: string | null = null) => ({
    id,
    ownerId: 'u1',
    state: 'active' as const,
    sdkVersion: '0.38.0',
    tags: ['a'],
    userMetadata: { k: 'v' },
    idempotencyKey: key,
    createdAt: 1,
    heartbeatAt,
    endedAt: null,
    endReason: null,
  });

  it('keeps sessions, finds the silent ones and ends each once', async () => {
    await repo.insertSession(session('s1', 1000, 'retry-key'));
    await repo.insertSession(session('s2', 5000));
    expect((await repo.findSessionByKey('u1', 'retry-key'))?.id).toBe('s1');
    expect(await repo.findSessionByKey('u2', 'retry-key')).toBeNull();
    expect(await repo.countActiveSessions('u1')).toBe(2);
    expect((await repo.silentSessions(2000, 10)).map((s) => s.id)).toEqual(['s1']);
    expect(await repo.endSession('s1', 'expired', 'no heartbeat', 3000)).toBe(true);
    expect(await repo.endSession('s1', 'finished', 'again', 4000)).toBe(false);
    expect(await repo.findSession('s1')).toMatchObject({ state: 'expired', endReason: 'no heartbeat', endedAt: 3000, tags: ['a'], userMetadata: { k: 'v' } });
    await repo.heartbeat('s1', 9000);
    expect((await repo.findSession('s1'))?.heartbeatAt).toBe(1000);
  });

  it('keeps runners, training clients and samplers; a second insert of one id is a resubmission', async () => {
    await repo.insertRunner({ jobId: JOB, sessionId: 's2', ownerId: 'u1', baseKey: '{"preset":"tiny-char"}', createdAt: 2 });
    expect((await repo.runnersOf('s2')).map((r) => r.jobId)).toEqual([JOB]);
    const model = {
      id: 's2:train:0',
      sessionId: 's2',
      ownerId: 'u1',
      jobId: JOB,
      seq: 0,
      baseModel: 'tiny-char',
      loraRank: 8,
      lora: { train_attn: true, train_mlp: true, train_unembed: false, seed: null },
      loadedFrom: null,
      userMetadata: null,
      createdAt: 10,
      lastRequestAt: 10,
    };
    expect(await repo.insertModel(model)).toBe(true);
    expect(await repo.insertModel(model)).toBe(false);
    expect(await repo.insertModel({ ...model, id: 's2:train:1', seq: 1, createdAt: 20 })).toBe(true);
    expect(await repo.countModels({ sessionId: 's2' })).toBe(2);
    expect(await repo.countModels({ jobId: JOB })).toBe(2);
    const page = await repo.modelsOf('u1', 0, 1);
    expect(page).toEqual({ rows: [expect.objectContaining({ id: 's2:train:1', lora: model.lora })], total: 2 });
    expect((await repo.modelsOf('u2', 0, 10)).total).toBe(0);
    const sampler = { id: 's2:sample:0', sessionId: 's2', ownerId: 'u1', jobId: JOB, seq: 0, baseModel: 'tiny-char', modelPath: null, sourceModelId: 's2:train:0', createdAt: 30 };
    expect(await repo.insertSampler(sampler)).toBe(true);
    expect(await repo.insertSampler(sampler)).toBe(false);
    expect(await repo.findSampler('s2:sample:0')).toMatchObject({ sourceModelId: 's2:train:0', modelPath: null });
  });
});
