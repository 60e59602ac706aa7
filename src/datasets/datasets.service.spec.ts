import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Principal } from '../auth/principal';
import { AppConfig } from '../config/app-config';
import type { EnvironmentRegistry } from '../registry/environment-registry.service';
import { checkDatasetRow } from '@opentinker/env-sdk';
import { firstUsableRow } from './dataset-check';
import type { DatasetReader } from './dataset-reader';
import type { DatasetEntity } from './dataset.entity';
import type { StorageQuota } from './storage-quota.service';
import type { DatasetsRepository } from './datasets.repository';
import type { JobsRepository } from '../jobs/jobs.repository';
import { DatasetsService } from './datasets.service';

describe('DatasetsService.assertUsable (submit-time check of environment.dataset)', () => {
  const id = '0b4e28ba-2fa1-41d2-883f-0016d3cca427';
  const alice: Principal = { userId: 'alice', name: 'alice', role: 'user', keyId: 'k1' };
  const bob: Principal = { userId: 'bob', name: 'bob', role: 'user', keyId: 'k2' };
  const admin: Principal = { userId: 'root', name: 'admin', role: 'admin', keyId: 'k3' };
  const mathCheck = (row: object) => ('prompt' in row ? null : 'no prompt');
  const env = (envId: string, validateRow?: (row: object) => string | null) => ({ id: envId, status: 'loaded', environment: { id: envId, validateRow } });
  let home: string;
  let service: DatasetsService;

  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'ot-ds-svc-'));
    const dataset = { id, ownerId: 'alice', environmentId: 'math', format: 'jsonl' } as DatasetEntity;
    const repo = { findById: async (x: string) => (x === id ? dataset : null) } as unknown as DatasetsRepository;
    const registry = {
      list: () => [env('math', mathCheck), env('math-tool', (row) => mathCheck(row)), env('gomoku'), env('board', () => 'needs a board')],
    } as unknown as EnvironmentRegistry;
    // The reader thread runs the same row check in-process here, against this test's fake environments.
    const reader = {
      sample: (path: string, format: 'jsonl', envId: string, limit: number) => {
        const environment = registry.list().find((r) => r.id === envId)!.environment!;
        return firstUsableRow(path, format, (row) => checkDatasetRow(environment, row), limit);
      },
    } as unknown as DatasetReader;
    service = new DatasetsService(repo, {} as JobsRepository, registry, new AppConfig({ home } as AppConfig['values']), reader, {} as StorageQuota);
    mkdirSync(join(home, 'datasets', id), { recursive: true });
    writeFileSync(join(home, 'datasets', id, 'data.jsonl'), '{"prompt":"2+2?"}\n{"prompt":"3+3?"}\n');
  });
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  const field = 'environment.dataset';

  it('lets the owner and admins use it, with environments whose row check its rows pass', async () => {
    await expect(service.assertUsable(alice, id, field, 'math')).resolves.toMatchObject({ id });
    await expect(service.assertUsable(alice, id, field, 'math-tool')).resolves.toMatchObject({ id });
    await expect(service.assertUsable(alice, id, field, 'gomoku')).resolves.toMatchObject({ id });
    await expect(service.assertUsable(alice, id, field, 'remote-only')).resolves.toMatchObject({ id });
    await expect(service.assertUsable(admin, id, field)).resolves.toMatchObject({ id });
  });

  it('refuses other users, unknown ids and malformed ids with a 400 naming the field', async () => {
    for (const [caller, ref] of [
      [bob, id],
      [alice, '1b4e28ba-2fa1-41d2-883f-0016d3cca427'],
      [alice, '../etc'],
    ] as const) {
      await expect(service.assertUsable(caller, ref, field)).rejects.toMatchObject({ code: 'OT_ERR_VALIDATION', field, status: 400 });
    }
  });

  it('refuses a dataset whose file is gone, and one whose rows the job’s environment cannot use', async () => {
    await expect(service.assertUsable(alice, id, 'environment.val_dataset', 'board')).rejects.toMatchObject({
      field: 'environment.val_dataset',
      message: expect.stringContaining('was checked for environment math; board cannot use its rows (none of its first 2 rows is usable: needs a board)'),
    });
    rmSync(join(home, 'datasets', id), { recursive: true });
    await expect(service.assertUsable(alice, id, field, 'math')).rejects.toMatchObject({ field, message: expect.stringContaining('has no file') });
  });
});
