import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestApp } from '../support/test-app';
import { folderTar, tarOf, writeTinyModelFolder, type TarEntry } from '../support/tiny-model-folder';
import { startTenants, type Tenants } from './tenants';

/**
 * Model folders tenants upload (`POST /v1/models`, a tar stream): an upload is a tenant's bytes landing
 * on the server's disk and later read by model servers and job runners, so it may hold nothing but a
 * model folder's regular files, at its top, within the size cap and the tenant's quota; and a tenant's
 * `model:<id>` is theirs alone.
 */
describe('security: uploaded model folders', () => {
  let folder: string;
  let config: Buffer;
  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), 'model-upload-sec-'));
    await writeTinyModelFolder(folder);
    config = readFileSync(join(folder, 'config.json'));
  });
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  const upload = (t: TestApp, key: string, body: Buffer, name = 'm') =>
    t.app.inject({ method: 'POST', url: `/v1/models?name=${name}`, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-tar' }, payload: body });
  const kept = (t: TestApp) => {
    try {
      return readdirSync(join(t.home, 'models'));
    } catch {
      return [];
    }
  };

  describe('what a tar may hold', () => {
    let s: Tenants;
    beforeAll(async () => {
      s = await startTenants();
    });
    afterAll(async () => s.t.close());

    const hostile: Array<[string, TarEntry[], RegExp]> = [
      ['a symbolic link', [{ name: 'config.json', type: 'symlink', linkname: '/etc/passwd' }], /is a symlink; only regular files/],
      [
        'a hard link',
        [
          { name: 'config.json', body: config },
          { name: 'tokenizer.json', type: 'link', linkname: 'config.json' },
        ],
        /is a link; only regular files/,
      ],
      ['a link to a file outside', [{ name: 'model.safetensors', type: 'link', linkname: '../../../opentinker.db' }], /is a link/],
      ['a device', [{ name: 'model.safetensors', type: 'character-device' }], /is a character-device/],
      ['a fifo', [{ name: 'model.safetensors', type: 'fifo' }], /is a fifo/],
      ['a .. path', [{ name: '../../jobs/config.json', body: config }], /leaves the folder/],
      ['a .. path under a folder', [{ name: 'my-model/../../config.json', body: config }], /leaves the folder/],
      ['an absolute path', [{ name: '/tmp/config.json', body: config }], /absolute path/],
      ['a subfolder', [{ name: 'my-model/onnx/model.safetensors', body: 'x' }], /not a file at the model folder's top/],
      [
        'code',
        [
          { name: 'config.json', body: config },
          { name: 'modeling_evil.py', body: 'import os' },
        ],
        /"modeling_evil.py" is not a file a model folder needs/,
      ],
      [
        'pickled weights',
        [
          { name: 'config.json', body: config },
          { name: 'pytorch_model.bin', body: 'x' },
        ],
        /"pytorch_model.bin" is not a file/,
      ],
      [
        'a file twice',
        [
          { name: 'config.json', body: config },
          { name: 'config.json', body: '{}' },
        ],
        /appears twice/,
      ],
      [
        'two top folders',
        [
          { name: 'a/config.json', body: config },
          { name: 'b/model.safetensors', body: 'x' },
        ],
        /outside the folder a\//,
      ],
      ['no weights', [{ name: 'config.json', body: config }], /no \*\.safetensors/],
      [
        'weights that are not safetensors',
        [
          { name: 'config.json', body: config },
          { name: 'tokenizer.json', body: '{}' },
          { name: 'model.safetensors', body: 'not safetensors' },
        ],
        /Model folder refused/,
      ],
    ];
    it.each(hostile)('refuses %s, keeping nothing', async (_, entries, why) => {
      const res = await upload(s.t, s.alice, await tarOf(entries));
      const body = JSON.parse(res.body);
      expect([res.statusCode, body.code]).toEqual([400, 'OT_ERR_MODEL_INVALID']);
      expect(body.message).toMatch(why);
      expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'OT_ERR_MODEL_INVALID' });
      expect(body.message).not.toContain(s.t.home);
      expect(kept(s.t)).toEqual([]);
    });

    it('refuses what is not a tar stream', async () => {
      const res = await upload(s.t, s.alice, Buffer.from('{"not":"a tar"}'.repeat(64)));
      expect([res.statusCode, JSON.parse(res.body).code]).toEqual([400, 'OT_ERR_MODEL_INVALID']);
      expect(kept(s.t)).toEqual([]);
    });
  });

  it('refuses an upload over model_upload_max_bytes (413 naming the setting), declared or streamed', async () => {
    const s = await startTenants({ config: { model_upload_max_bytes: 64 * 1024 } });
    try {
      const big = await tarOf([
        { name: 'config.json', body: config },
        { name: 'model.safetensors', body: Buffer.alloc(200 * 1024) },
      ]);
      const res = await upload(s.t, s.alice, big);
      const body = JSON.parse(res.body);
      expect([res.statusCode, body.code]).toEqual([413, 'OT_ERR_MODEL_TOO_LARGE']);
      expect(body.message).toContain('setting model_upload_max_bytes');
      const chunked = await s.t.app.inject({
        method: 'POST',
        url: '/v1/models?name=m',
        headers: { authorization: `Bearer ${s.alice}`, 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' },
        payload: big,
      });
      expect([chunked.statusCode, JSON.parse(chunked.body).code]).toEqual([413, 'OT_ERR_MODEL_TOO_LARGE']);
      expect(kept(s.t)).toEqual([]);
    } finally {
      await s.t.close();
    }
  });

  it('counts uploaded models against the storage quota, and refuses one that does not fit', async () => {
    const tar = await folderTar(folder);
    const s = await startTenants({ config: { storage_quota_bytes: Math.floor(tar.length * 1.5) } });
    try {
      expect((await upload(s.t, s.alice, tar)).statusCode).toBe(201);
      const over = await upload(s.t, s.alice, tar, 'second');
      expect([over.statusCode, JSON.parse(over.body).code]).toEqual([413, 'OT_ERR_QUOTA_EXCEEDED']);
      expect(kept(s.t)).toHaveLength(1);
      // Bob's quota is his own.
      expect((await upload(s.t, s.bob, tar)).statusCode).toBe(201);
    } finally {
      await s.t.close();
    }
  });

  it('keeps model:<id> its owner’s: another user gets 404 on every route and in job specs', async () => {
    const s = await startTenants();
    try {
      const id = JSON.parse((await upload(s.t, s.alice, await folderTar(folder))).body).id as string;
      const as = (key: string) => ({ key });
      const attempts = [
        await s.t.request('GET', `/v1/models/${id}`, as(s.bob)),
        await s.t.request('DELETE', `/v1/models/${id}`, as(s.bob)),
        await s.t.request('POST', '/v1/chat/completions', { key: s.bob, body: { model: id, messages: [{ role: 'user', content: 'x' }] } }),
        await s.t.request('POST', '/v1/completions', { key: s.bob, body: { model: id, prompt: 'x' } }),
        await s.t.request('POST', '/v1/jobs', {
          key: s.bob,
          body: { kind: 'inference', environment: { id: 'math' }, model: { path: id }, num_tasks: 1 },
        }),
      ];
      for (const res of attempts) expect([res.status, res.body.code]).toEqual([404, 'OT_ERR_MODEL_NOT_FOUND']);
      // The same answer as for a model that does not exist, so ids cannot be probed.
      const none = await s.t.request('GET', '/v1/models/model:00000000-0000-4000-8000-000000000000', as(s.bob));
      expect(none.body.message.replace('00000000-0000-4000-8000-000000000000', 'X')).toBe(attempts[0].body.message.replace(id.slice(6), 'X'));
      expect((await s.t.request('GET', '/v1/models', as(s.bob))).body.data).toEqual([]);
      expect((await s.t.request('GET', `/v1/models/${id}`, as(s.alice))).status).toBe(200);
    } finally {
      await s.t.close();
    }
  });
});
