import { z } from 'zod';
import { datasetConfigKey, isHostOnlyKey } from './config-policy';
import { resolveTenantConfig } from './tenant-config';
import { defineEnvironment } from './environment';
import { isEnvironmentError } from './errors';

const env = defineEnvironment({
  id: 'sandboxed',
  version: '1.0.0',
  description: 'test',
  turnMode: 'single',
  taskSource: 'dataset',
  configSchema: z
    .object({
      train_path: z.string().optional(),
      test_path: z.string().optional(),
      memory_mb: z.number().int().default(512),
      uid: z.number().int().default(65534),
      cache_dir: z.string().optional(),
      notes_url: z.string().optional(),
      difficulty: z.number().default(1),
    })
    .strict(),
  configPolicy: {
    train_path: { set: 'dataset', split: 'train' },
    test_path: { set: 'dataset', split: 'test' },
    memory_mb: { limit: 'sandbox_memory_mb' },
    uid: { set: 'host', setting: 'sandbox_uid' },
    notes_url: { set: 'tenant' },
  },
  create: () => ({
    tasks: { size: () => 0, get: () => null },
    newEpisode: () => ({ reset: () => [], step: () => ({ observation: '', reward: 0, done: true, info: {} }), close: () => undefined }),
  }),
});

function refusal(fn: () => unknown): { code: string; field?: string; message: string } {
  try {
    fn();
  } catch (error) {
    if (isEnvironmentError(error)) return { code: error.code, field: error.field, message: error.message };
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('resolveTenantConfig', () => {
  it('refuses dataset files and host settings from a tenant, naming the key and what to do instead', () => {
    expect(refusal(() => resolveTenantConfig(env, { train_path: '/etc/passwd' }))).toEqual({
      code: 'ENV_CONFIG_FORBIDDEN',
      field: 'config.train_path',
      message: expect.stringContaining('environment.dataset'),
    });
    expect(refusal(() => resolveTenantConfig(env, { test_path: 'x' })).message).toContain('environment.val_dataset');
    expect(refusal(() => resolveTenantConfig(env, { uid: 0 }))).toMatchObject({ code: 'ENV_CONFIG_FORBIDDEN', field: 'config.uid' });
  });

  it("treats undeclared *_path, *_dir, *_file and *_url keys as host-only, unless declared the tenant's", () => {
    expect(refusal(() => resolveTenantConfig(env, { cache_dir: '/root' }))).toMatchObject({ code: 'ENV_CONFIG_FORBIDDEN', field: 'config.cache_dir' });
    expect(resolveTenantConfig(env, { notes_url: 'https://example.com' })).toMatchObject({ notes_url: 'https://example.com' });
    expect(isHostOnlyKey(undefined, 'weights_file')).toBe(true);
    expect(isHostOnlyKey(undefined, 'difficulty')).toBe(false);
  });

  it('refuses a value above the ceiling and lowers a default above it', () => {
    const host = { limits: { sandbox_memory_mb: 256 } };
    expect(refusal(() => resolveTenantConfig(env, { memory_mb: 1 << 20 }, host))).toEqual({
      code: 'ENV_CONFIG_LIMIT',
      field: 'config.memory_mb',
      message: "config.memory_mb 1048576 is above this server's limit 256 (operator setting sandbox_memory_mb)",
    });
    expect(resolveTenantConfig(env, { memory_mb: 128 }, host)).toMatchObject({ memory_mb: 128 });
    expect(resolveTenantConfig(env, {}, host)).toMatchObject({ memory_mb: 256 });
    expect(resolveTenantConfig(env, {}, {})).toMatchObject({ memory_mb: 512 });
  });

  it("fills in the host's dataset files and settings; the operator's base config may set host-only keys", () => {
    const c = resolveTenantConfig(env, { difficulty: 3 }, { datasets: { train: '/data/a.jsonl' }, settings: { sandbox_uid: 1234 } });
    expect(c).toMatchObject({ train_path: '/data/a.jsonl', uid: 1234, difficulty: 3 });
    expect(resolveTenantConfig(env, {}, { base: { test_path: '/srv/test.jsonl', difficulty: 2 } })).toMatchObject({ test_path: '/srv/test.jsonl', difficulty: 2 });
    expect(resolveTenantConfig(env, { difficulty: 5 }, { base: { difficulty: 2 } })).toMatchObject({ difficulty: 5 });
  });

  it('still validates with the schema, and names the dataset keys per split', () => {
    expect(refusal(() => resolveTenantConfig(env, { bogus: 1 }))).toMatchObject({ code: 'ENV_INVALID_CONFIG', field: 'config.bogus' });
    expect(refusal(() => resolveTenantConfig(env, [] as unknown))).toMatchObject({ code: 'ENV_INVALID_CONFIG', field: 'config' });
    expect(datasetConfigKey(env, 'train')).toBe('train_path');
    expect(datasetConfigKey(env, 'test')).toBe('test_path');
    expect(datasetConfigKey({ configPolicy: undefined }, 'train')).toBeNull();
  });

  it('defineEnvironment refuses an unknown policy', () => {
    expect(() => defineEnvironment({ ...env, configPolicy: { memory_mb: { limit: 'ram' as never } } })).toThrow(/configPolicy\.memory_mb is not a known policy/);
  });
});
