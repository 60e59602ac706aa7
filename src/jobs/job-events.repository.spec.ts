import type { DataSource } from 'typeorm';
import { jobsFixture, testDatabases, type TestDatabase } from '../../test/support/test-databases';
import { JobEventsRepository } from './job-events.repository';
import { JobEntity } from './job.entity';
import { JobsRepository } from './jobs.repository';

/** A runner's output per step goes to the database as one batch: progress, ordered events, metric series. */
describe.each(testDatabases('job-events'))('JobEventsRepository.appendOutput (%s)', (_, open) => {
  let database: TestDatabase;
  let db: DataSource;
  let repo: JobsRepository;
  let events: JobEventsRepository;
  const id = '00000000-0000-4000-8000-0000000000e1';

  beforeAll(async () => {
    database = await open();
    ({ db, repo } = await jobsFixture(database));
    events = new JobEventsRepository(db);
    const t = 1_764_700_000_000;
    await repo.insert(
      Object.assign(new JobEntity(), {
        id,
        ownerId: 'u1',
        kind: 'train',
        name: null,
        state: 'running',
        priority: 0,
        environmentId: null,
        spec: { kind: 'train' },
        resources: { gpus: 0, cpu_slots: 1 },
        devices: ['cpu:0'],
        workerId: 'w1',
        attempts: 1,
        maxAttempts: 1,
        error: null,
        exitCode: null,
        progress: null,
        resumeState: null,
        cancelRequestedAt: null,
        leaseExpiresAt: null,
        createdAt: t,
        startedAt: t,
        finishedAt: null,
        updatedAt: t,
      }),
    );
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it('saves the progress, the events in the order given and the metric points of metrics events', async () => {
    const step1 = [
      { step: 1, name: 'reward', value: 0.25 },
      { step: 1, name: 'timing/step_s', value: 0.2 },
    ];
    await events.appendOutput(id, {
      progress: { step: 1, total: 2, message: 'reward 0.25' },
      events: [
        { type: 'log', data: { text: 'train: starting\n' } },
        { type: 'metrics', data: { points: step1 } },
        { type: 'progress', data: { step: 1, total: 2, message: 'reward 0.25' } },
      ],
    });
    await events.appendOutput(id, {
      progress: { step: 2, total: 2, message: 'reward 0.5' },
      events: [
        { type: 'metrics', data: { points: [{ step: 2, name: 'reward', value: 0.5 }] } },
        { type: 'progress', data: { step: 2, total: 2, message: 'reward 0.5' } },
        { type: 'log', data: { text: 'step 2/2\n' } },
      ],
    });
    // A batch of log text alone leaves the progress as it was.
    await events.appendOutput(id, { progress: null, events: [{ type: 'log', data: { text: 'done\n' } }] });

    expect((await repo.findById(id))?.progress).toEqual({ step: 2, total: 2, message: 'reward 0.5' });
    // (The insert recorded the job's `state` event first.)
    const stream = (await events.after(id, 0, 100)).filter((e) => e.type !== 'state');
    expect(stream.map((e) => [e.type, e.data])).toEqual([
      ['log', { text: 'train: starting\n' }],
      ['metrics', { points: step1 }],
      ['progress', { step: 1, total: 2, message: 'reward 0.25' }],
      ['metrics', { points: [{ step: 2, name: 'reward', value: 0.5 }] }],
      ['progress', { step: 2, total: 2, message: 'reward 0.5' }],
      ['log', { text: 'step 2/2\n' }],
      ['log', { text: 'done\n' }],
    ]);
    // Ids follow that order (SSE clients resume by id).
    const ids = stream.map((e) => Number(e.id));
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect((await events.series(id, { name: 'reward', limit: 10 })).map((p) => [p.step, p.value])).toEqual([
      [1, 0.25],
      [2, 0.5],
    ]);
    expect((await events.series(id, { limit: 10 })).map((p) => p.name)).toEqual(['reward', 'timing/step_s', 'reward']);
  });

  it('writes all of a batch or none of it', async () => {
    const before = (await events.after(id, 0, 100)).length;
    // A null value breaks the series table's NOT NULL: the progress update written before it rolls back.
    const bad = events.appendOutput(id, {
      progress: { step: 3, total: 3, message: 'never saved' },
      events: [{ type: 'metrics', data: { points: [{ step: 3, name: 'x', value: null as unknown as number }] } }],
    });
    await expect(bad).rejects.toThrow();
    expect((await repo.findById(id))?.progress).toEqual({ step: 2, total: 2, message: 'reward 0.5' });
    expect(await events.after(id, 0, 100)).toHaveLength(before);
  });
});
