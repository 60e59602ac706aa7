import { createReadStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Principal } from '../auth/principal';
import type { AppConfig } from '../config/app-config';
import type { JobsService } from './jobs.service';
import { JobResultsService } from './job-results.service';

const home = mkdtempSync(join(tmpdir(), 'ot-results-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

async function text(stream: Readable): Promise<string> {
  let out = '';
  for await (const chunk of stream) out += chunk.toString();
  return out;
}

function service(job: { kind: string; state: string }, artifacts: Array<{ name: string; path: string }> = []) {
  const jobs = {
    get: async () => job,
    artifacts: async () => artifacts,
    openArtifact: async (_c: Principal, _id: string, name: string) => ({ stream: createReadStream(artifacts.find((a) => a.name === name)!.path) }),
  } as unknown as JobsService;
  const config = { jobDir: (id: string) => join(home, 'jobs', id) } as unknown as AppConfig;
  return new JobResultsService(jobs, config);
}

const caller = { userId: 'u' } as Principal;

describe('JobResultsService', () => {
  it('streams whole lines of a running job, holding back one still being written', async () => {
    const work = join(home, 'jobs', 'j1', 'work');
    mkdirSync(work, { recursive: true });
    writeFileSync(join(work, 'results.jsonl'), '{"a":1}\n{"a":2}\n{"a":');
    expect(await text(await service({ kind: 'inference', state: 'running' }).open(caller, 'j1'))).toBe('{"a":1}\n{"a":2}\n');
  });

  it('serves the published artifact once there is one, and 404s before and for other kinds', async () => {
    const path = join(home, 'published.jsonl');
    writeFileSync(path, '{"b":1}\n');
    expect(await text(await service({ kind: 'inference', state: 'succeeded' }, [{ name: 'results.jsonl', path }]).open(caller, 'j2'))).toBe('{"b":1}\n');
    await expect(service({ kind: 'inference', state: 'queued' }).open(caller, 'j3')).rejects.toMatchObject({ code: 'OT_ERR_RESULTS_NOT_FOUND', field: 'id' });
    await expect(service({ kind: 'train', state: 'succeeded' }).open(caller, 'j4')).rejects.toThrow(/is a train job; only inference jobs have results/);
  });
});
