import { folderCycles } from './folder-cycles.cjs';

const mod = (source: string, ...deps: [string, ...string[]][]) => ({ source, dependencies: deps.map(([resolved, ...dependencyTypes]) => ({ resolved, dependencyTypes })) });

describe('folderCycles', () => {
  it('finds two folders that import each other, type-only imports included, and names the imports', () => {
    const cycles = folderCycles([
      mod('src/jobs/jobs.service.ts', ['src/scheduler/job-queue.ts', 'local']),
      mod('src/scheduler/embedded.queue.ts', ['src/jobs/job.entity.ts', 'type-only']),
    ]);
    expect(cycles).toEqual([
      {
        folders: ['src/jobs', 'src/scheduler'],
        links: [
          { from: 'src/jobs', to: 'src/scheduler', imports: ['src/jobs/jobs.service.ts => src/scheduler/job-queue.ts'] },
          { from: 'src/scheduler', to: 'src/jobs', imports: ['src/scheduler/embedded.queue.ts => src/jobs/job.entity.ts'] },
        ],
      },
    ]);
  });

  it('treats a sub-folder as a folder of its own, and finds longer cycles', () => {
    const cycles = folderCycles([
      mod('src/jobs/kinds/job-kinds.ts', ['src/jobs/kinds/train/train.kind.ts', 'local']),
      mod('src/jobs/kinds/train/train.kind.ts', ['src/metrics/names.ts', 'local']),
      mod('src/metrics/names.ts', ['src/jobs/kinds/job-kinds.ts', 'local']),
    ]);
    expect(cycles.map((c) => c.folders)).toEqual([['src/jobs/kinds', 'src/jobs/kinds/train', 'src/metrics']]);
  });

  it('ignores a lazy import(), imports inside one folder, and folders outside src/', () => {
    expect(
      folderCycles([
        mod('src/jobs/kinds/train/train.kind.ts', ['src/training/train.runner.ts', 'dynamic-import']),
        mod('src/training/train.runner.ts', ['src/jobs/kinds/train/train.kind.ts', 'type-only']),
        mod('src/hub/hub-cache.spec.ts', ['test/support/tmp.ts', 'local'], ['src/hub/hub-cache.ts', 'local']),
        mod('test/support/tmp.ts', ['src/database/data-source.ts', 'local']),
        mod('src/database/data-source.ts', ['src/hub/hub-cache.ts', 'local']),
      ]),
    ).toEqual([]);
  });
});
