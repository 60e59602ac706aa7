import type { JobSummary } from '../jobs/job.entity';
import { JobSummaryCache } from './job-summary.cache';
import { jobSummaryDto, writeJobSummary } from './jobs.dto';

const summary = (id: string, version: number, name: string): JobSummary => ({
  id,
  ownerId: 'u1',
  kind: 'sleep',
  name,
  state: 'queued',
  priority: 0,
  environmentId: null,
  resources: { gpus: 0, cpu_slots: 1 },
  devices: null,
  workerId: null,
  attempts: 0,
  maxAttempts: 1,
  error: null,
  exitCode: null,
  progress: null,
  cancelRequestedAt: null,
  createdAt: 1_764_700_000_000,
  startedAt: null,
  finishedAt: null,
  updatedAt: 1_764_700_000_000,
  version,
});

describe('JobSummaryCache', () => {
  // What the database holds now, and the ids each read asked for.
  let rows: Map<string, JobSummary>;
  let reads: string[][];
  const read = async (ids: string[]) => (reads.push(ids), ids.flatMap((id) => (rows.has(id) ? [rows.get(id)!] : [])));
  const page = (...ids: string[]) => ids.map((id) => ({ id, version: rows.get(id)?.version ?? 0 }));
  const names = (items: string[]) => items.map((json) => JSON.parse(json).name);
  const put = (s: JobSummary) => rows.set(s.id, s);

  beforeEach(() => {
    rows = new Map();
    reads = [];
    for (const id of ['a', 'b', 'c']) put(summary(id, 0, `${id}0`));
  });

  it('writes each job as the page schema does, in the page order, and reads only jobs it does not keep at their version', async () => {
    const cache = new JobSummaryCache();
    const items = await cache.items(page('c', 'a'), read);
    expect(items).toEqual([writeJobSummary(jobSummaryDto(rows.get('c')!)), writeJobSummary(jobSummaryDto(rows.get('a')!))]);
    expect(await cache.items(page('a', 'b', 'c'), read)).toHaveLength(3);
    expect(reads).toEqual([['c', 'a'], ['b']]);
    put(summary('b', 1, 'b1'));
    expect(names(await cache.items(page('a', 'b', 'c'), read))).toEqual(['a0', 'b1', 'c0']);
    expect(reads[2]).toEqual(['b']);
    await cache.items(page('a', 'b', 'c'), read);
    expect(reads).toHaveLength(3);
  });

  it('shows a job as read when it changed between the page and the read, and leaves out one that is gone', async () => {
    const cache = new JobSummaryCache();
    const listed = page('a', 'b');
    put(summary('a', 1, 'a1'));
    rows.delete('b');
    expect(names(await cache.items(listed, read))).toEqual(['a1']);
  });

  it('keeps at most max jobs, dropping the one kept longest ago', async () => {
    const cache = new JobSummaryCache(2);
    await cache.items(page('a', 'b'), read);
    await cache.items(page('c'), read);
    reads = [];
    await cache.items(page('a', 'b', 'c'), read);
    expect(reads).toEqual([['a']]);
  });
});
