import { existsSync } from 'node:fs';
import type { Worker } from 'node:worker_threads';
import type { DataSource } from 'typeorm';
import { jobsFixture, testDatabases, type TestDatabase } from '../../test/support/test-databases';
import type { AppConfig } from '../config/app-config';
import { InstallLayout } from '../config/install-layout';
import { JobListReader } from './job-list-reader.service';
import type { JobListQuery } from './job-list.sql';
import { serializeJobPage } from './job-page.serializer';
import { JobEntity } from './job.entity';
import { JobsRepository } from './jobs.repository';

const T = 1_764_700_000_000;
const job = (n: number, over: Partial<JobEntity> = {}): JobEntity =>
  Object.assign(new JobEntity(), {
    id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`, ownerId: n % 2 ? 'u1' : 'u2', kind: n % 3 ? 'sleep' : 'train',
    name: `job ${n} "quoted"`, state: n % 4 ? 'queued' : 'failed', priority: n % 5, environmentId: n % 3 ? null : 'math',
    spec: { kind: 'sleep', steps: 1 }, resources: { gpus: 0, cpu_slots: 1 }, devices: n % 4 ? null : ['cpu:0'], workerId: null,
    attempts: 0, maxAttempts: 1, error: n % 4 ? null : 'boom\nline 2', exitCode: null, progress: n % 4 ? null : { step: n, total: 10, message: null },
    resumeState: null, cancelRequestedAt: null, leaseExpiresAt: null, createdAt: T + n, startedAt: null, finishedAt: null, updatedAt: T + n,
    ...over,
  });

describe.each(testDatabases('job-list-reader'))('JobListReader (%s)', (_, open) => {
  let database: TestDatabase;
  let db: DataSource;
  let repo: JobsRepository;
  let reader: JobListReader;

  const install = new InstallLayout(process.cwd());
  const onApiThread = async (q: JobListQuery, page: number) => serializeJobPage({ ...(await repo.list(q)), page, limit: q.limit });
  const text = async (body: Promise<Buffer>) => (await body).toString('utf8');
  const newReader = (threads: number) => new JobListReader({ values: { list_reader_threads: threads }, install } as AppConfig, repo, db);
  const threads = (r: JobListReader) => (r as unknown as { threads: { worker: Worker }[] }).threads.map((t) => t.worker);

  beforeAll(async () => {
    // The thread runs the compiled entry, as the server does (`npm test` builds first).
    expect(existsSync(install.listReaderEntry)).toBe(true);
    database = await open();
    ({ db, repo } = await jobsFixture(database));
    for (let n = 1; n <= 30; n++) await repo.insert(job(n));
    reader = newReader(2);
    reader.onModuleInit();
  });
  afterAll(async () => {
    await reader?.onModuleDestroy();
    await db?.destroy();
    await database?.drop();
  });

  it('writes on its threads the body the API thread writes, for filters, pages and a page past the end', async () => {
    expect(reader.threadCount).toBe(2);
    const queries: [JobListQuery, number][] = [
      [{ limit: 50, offset: 0 }, 1],
      [{ ownerId: 'u1', limit: 5, offset: 5 }, 2],
      [{ states: ['failed', 'queued', 'failed'], kind: 'train', limit: 3, offset: 0 }, 1],
      [{ ownerId: 'u2', kind: 'nope', limit: 10, offset: 0 }, 1],
      [{ limit: 10, offset: 40 }, 5],
    ];
    for (const [q, page] of queries) {
      const body = await text(reader.page(q, page, q.limit));
      expect(body).toBe(await onApiThread(q, page));
    }
    expect(JSON.parse(await text(reader.page({ limit: 2, offset: 0 }, 1, 2)))).toMatchObject({ total: 30, page: 1, limit: 2, items: [{ name: 'job 30 "quoted"' }, { name: 'job 29 "quoted"' }] });
    expect(JSON.parse(await text(reader.page({ limit: 10, offset: 40 }, 5, 10)))).toEqual({ items: [], page: 5, limit: 10, total: 30 });
  });

  it('lists a job as soon as the API connection has committed it', async () => {
    for (let n = 31; n <= 35; n++) {
      await repo.insert(job(n));
      const first = JSON.parse(await text(reader.page({ limit: 1, offset: 0 }, 1, 1)));
      expect(first.items[0].id).toBe(job(n).id);
      expect(first.total).toBe(n);
    }
  });

  it('answers from the API thread when its thread dies mid-request, and starts a new thread', async () => {
    const q: JobListQuery = { ownerId: 'u1', limit: 4, offset: 0 };
    const [dying, survivor] = threads(reader);
    const inFlight = [reader.page(q, 1, 4), reader.page(q, 1, 4)];
    await dying.terminate();
    for (const body of inFlight) expect(await text(body)).toBe(await onApiThread(q, 1));
    expect(reader.threadCount).toBe(2);
    expect(threads(reader)).toContain(survivor);
    expect(threads(reader)).not.toContain(dying);
    expect(await text(reader.page(q, 1, 4))).toBe(await onApiThread(q, 1));
  });

  it('reads on the API thread when list_reader_threads is 0', async () => {
    const off = newReader(0);
    off.onModuleInit();
    try {
      expect(off.threadCount).toBe(0);
      expect(await text(off.page({ limit: 7, offset: 3 }, 1, 7))).toBe(await onApiThread({ limit: 7, offset: 3 }, 1));
    } finally {
      await off.onModuleDestroy();
    }
  });
});
