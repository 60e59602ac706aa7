import { jobOutputs, loadJobKinds } from './public/job-kinds.mjs';
import type { JobKindInfo } from './public/job-kinds.mjs';

const kind = (over: Partial<JobKindInfo> & { kind: string }): JobKindInfo => ({
  description: '',
  resumable: false,
  checkpoints: false,
  trains: false,
  calls: false,
  results: null,
  ...over,
});

describe('the job page’s sections, by capability', () => {
  const kinds = [
    kind({ kind: 'evaluate', results: 'scores.jsonl' }),
    kind({ kind: 'distill', trains: true }),
    kind({ kind: 'snapshot', checkpoints: true }),
    kind({ kind: 'both', checkpoints: true, trains: true, results: 'results.jsonl' }),
    kind({ kind: 'plain', resumable: true, calls: true }),
  ];

  it('shows results for kinds that write a results file and checkpoints for kinds that save or train, whatever their names', () => {
    expect(jobOutputs(kinds, 'evaluate')).toEqual({ results: true, resultsFile: 'scores.jsonl', checkpoints: false });
    expect(jobOutputs(kinds, 'distill')).toEqual({ results: false, resultsFile: null, checkpoints: true });
    expect(jobOutputs(kinds, 'snapshot')).toEqual({ results: false, resultsFile: null, checkpoints: true });
    expect(jobOutputs(kinds, 'both')).toEqual({ results: true, resultsFile: 'results.jsonl', checkpoints: true });
    expect(jobOutputs(kinds, 'plain')).toEqual({ results: false, resultsFile: null, checkpoints: false });
  });

  it('shows neither for a kind the server does not list', () => {
    expect(jobOutputs(kinds, 'inference')).toEqual({ results: false, resultsFile: null, checkpoints: false });
    expect(jobOutputs([], 'train')).toEqual({ results: false, resultsFile: null, checkpoints: false });
  });

  it('asks the server once per API client, and again after a failure', async () => {
    let calls = 0;
    let fail = true;
    const api = {
      get: async (path: string) => {
        calls += 1;
        expect(path).toBe('/v1/job-kinds');
        if (fail) throw new Error('offline');
        return kinds;
      },
    } as unknown as Parameters<typeof loadJobKinds>[0];
    await expect(loadJobKinds(api)).rejects.toThrow('offline');
    fail = false;
    expect(await loadJobKinds(api)).toBe(kinds);
    expect(await loadJobKinds(api)).toBe(kinds);
    expect(calls).toBe(2);
  });
});
