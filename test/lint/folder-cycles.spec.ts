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
      mod('src/kinds/job-kinds.ts', ['src/kinds/train/train.kind.ts', 'local']),
      mod('src/kinds/train/train.kind.ts', ['src/metrics/names.ts', 'local']),
      mod('src/metrics/names.ts', ['src/kinds/job-kinds.ts', 'local']),
    ]);
    expect(cycles.map((c) => c.folders)).toEqual([['src/kinds', 'src/kinds/train', 'src/metrics']]);
  });

  it('counts a lazy import()', () => {
    const cycles = folderCycles([
      mod('src/kinds/train/train.kind.ts', ['src/training/train.runner.ts', 'dynamic-import']),
      mod('src/training/train.runner.ts', ['src/kinds/train/train.kind.ts', 'type-only']),
    ]);
    expect(cycles.map((c) => c.folders)).toEqual([['src/kinds/train', 'src/training']]);
  });

  it('at the top level, merges sub-folders into their top-level folder and the entry points into src', () => {
    const modules = [
      // Sub-folders of one top-level folder importing each other: a cycle of folders, not of top-level folders.
      mod('src/kinds/job-kinds.ts', ['src/kinds/train/train.kind.ts', 'local']),
      mod('src/kinds/train/train.kind.ts', ['src/kinds/spec/job-kind.ts', 'local']),
      mod('src/kinds/spec/job-kind.ts', ['src/kinds/job-kinds.ts', 'type-only']),
      // A runtime folder below kinds reading a kind's spec closes a cycle of top-level folders only.
      mod('src/kinds/train/train.runner.ts', ['src/rollout/policy.ts', 'local']),
      mod('src/rollout/policy.ts', ['src/kinds/spec/job-kind.ts', 'type-only']),
      mod('src/app.ts', ['src/kinds/job-kinds.ts', 'local']),
      mod('src/cli/cli.ts', ['src/app.ts', 'dynamic-import']),
    ];
    expect(folderCycles(modules).map((c) => c.folders)).toEqual([['src/kinds', 'src/kinds/spec', 'src/kinds/train', 'src/rollout']]);
    expect(folderCycles(modules, 'top')).toEqual([
      {
        folders: ['src/kinds', 'src/rollout'],
        links: [
          { from: 'src/kinds', to: 'src/rollout', imports: ['src/kinds/train/train.runner.ts => src/rollout/policy.ts'] },
          { from: 'src/rollout', to: 'src/kinds', imports: ['src/rollout/policy.ts => src/kinds/spec/job-kind.ts'] },
        ],
      },
    ]);
  });

  it('ignores imports inside one folder, and folders outside src/', () => {
    expect(
      folderCycles([
        mod('src/hub/hub-cache.spec.ts', ['test/support/tmp.ts', 'local'], ['src/hub/hub-cache.ts', 'local']),
        mod('test/support/tmp.ts', ['src/database/data-source.ts', 'local']),
        mod('src/database/data-source.ts', ['src/hub/hub-cache.ts', 'local']),
      ]),
    ).toEqual([]);
  });
});
