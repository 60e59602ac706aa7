import Database from 'better-sqlite3';
import { join } from 'node:path';
import { generateApiKey, hashApiKey } from '../../src/auth/api-key';
import { startTestApp, TestApp } from '../support/test-app';

describe('users and API keys', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ worker: false, config: { auth_failures_per_minute: 5 } });
  });
  afterAll(() => t.close());

  it('requires a valid bearer key on every /v1 route', async () => {
    for (const [method, url] of [
      ['GET', '/v1/users/me'],
      ['GET', '/v1/jobs'],
      ['POST', '/v1/jobs'],
      ['GET', '/v1/devices'],
      ['GET', '/v1/keys'],
    ]) {
      const res = await t.request(method, url, { key: null, headers: { 'x-forwarded-for': 'ignored' } });
      expect([url, res.status, res.body.code, res.body.field]).toEqual([url, 401, 'OT_ERR_UNAUTHENTICATED', 'authorization']);
    }
  });

  it('creates users with a key shown once and stored only as a hash', async () => {
    const res = await t.request('POST', '/v1/users', { body: { name: 'dana' } });
    expect(res.status).toBe(201);
    expect(res.body.user).toMatchObject({ name: 'dana', role: 'user' });
    const key: string = res.body.api_key.key;
    expect(key).toMatch(/^otk_[0-9A-Za-z]{12}_[0-9A-Za-z]{49}$/);
    expect(res.body.api_key.prefix).toBe(key.slice(0, 16));

    const me = await t.request('GET', '/v1/users/me', { key });
    expect(me.body).toMatchObject({ name: 'dana', role: 'user', id: res.body.user.id });

    const listed = await t.request('GET', '/v1/keys', { key });
    expect(listed.body).toHaveLength(1);
    expect(JSON.stringify(listed.body)).not.toContain(key);

    const db = new Database(join(t.home, 'opentinker.db'), { readonly: true });
    const rows = db.prepare('SELECT * FROM api_keys').all();
    db.close();
    expect(JSON.stringify(rows)).not.toContain(key);
    expect(JSON.stringify(rows)).not.toContain(key.slice(16));
  });

  it('takes a key in X-API-Key too, and in the Tinker SDK form tml- + the key, as the same user', async () => {
    const created = (await t.request('POST', '/v1/users', { body: { name: 'tina' } })).body;
    const key: string = created.api_key.key;
    for (const headers of <Record<string, string>[]>[{ 'x-api-key': key }, { 'x-api-key': `tml-${key}` }, { authorization: `Bearer tml-${key}` }]) {
      const me = await t.request('GET', '/v1/users/me', { key: null, headers });
      expect([Object.keys(headers)[0], me.status, me.body.id]).toEqual([Object.keys(headers)[0], 200, created.user.id]);
    }
    const admin = await t.request('GET', '/v1/users/me', { key: null, headers: { 'x-api-key': `tml-${t.adminKey}` } });
    expect([admin.status, admin.body.role]).toEqual([200, 'admin']);
    const wrong = await t.request('GET', '/v1/users/me', { key: null, headers: { 'x-api-key': `tml-${key.slice(0, -1)}${key.endsWith('a') ? 'b' : 'a'}` } });
    expect([wrong.status, wrong.body.code, wrong.body.field]).toEqual([401, 'OT_ERR_UNAUTHENTICATED', 'x-api-key']);
  });

  it('keeps keys issued before key ids, and refuses unknown ids without a lookup of their secret', async () => {
    const created = (await t.request('POST', '/v1/users', { body: { name: 'olga' } })).body;
    // A key as issued before ids: otk_ + 43 base64url characters, stored as SHA-256 with its first 12 characters as prefix.
    const legacy = 'otk_Leg-acy_' + 'x'.repeat(35);
    const db = new Database(join(t.home, 'opentinker.db'));
    db.prepare('UPDATE api_keys SET hash = ?, prefix = ?, key_id = ? WHERE id = ?').run(hashApiKey(legacy), legacy.slice(0, 12), legacy.slice(4, 12), created.api_key.id);
    db.close();
    const me = await t.request('GET', '/v1/users/me', { key: `tml-${legacy}` });
    expect([me.status, me.body.id]).toEqual([200, created.user.id]);
    const unknown = await t.request('GET', '/v1/users/me', { key: generateApiKey().key });
    expect([unknown.status, unknown.body.code]).toEqual([401, 'OT_ERR_UNAUTHENTICATED']);
  });

  it('lets only admins create and list users, and refuses taken names', async () => {
    const user = (await t.request('POST', '/v1/users', { body: { name: 'erin' } })).body.api_key.key;
    const byUser = await t.request('POST', '/v1/users', { key: user, body: { name: 'frank' } });
    expect([byUser.status, byUser.body.code]).toEqual([403, 'OT_ERR_FORBIDDEN']);
    expect((await t.request('GET', '/v1/users', { key: user })).status).toBe(403);
    const anonymous = await t.request('POST', '/v1/users', { key: null, body: { name: 'frank' } });
    expect([anonymous.status, anonymous.body.code]).toEqual([401, 'OT_ERR_UNAUTHENTICATED']);
    const taken = await t.request('POST', '/v1/users', { body: { name: 'erin' } });
    expect([taken.status, taken.body.code, taken.body.field]).toEqual([409, 'OT_ERR_CONFLICT', 'name']);
    const bad = await t.request('POST', '/v1/users', { body: { name: 'no spaces allowed' } });
    expect([bad.status, bad.body.field]).toEqual([400, 'name']);
    const extra = await t.request('POST', '/v1/users', { body: { name: 'gina', admin: true } });
    expect([extra.status, extra.body.field]).toEqual([400, 'admin']);
    const admin = await t.request('POST', '/v1/users', { body: { name: 'root2', role: 'admin' } });
    expect(admin.body.user.role).toBe('admin');
    const names = (await t.request('GET', '/v1/users')).body.map((u: any) => u.name);
    expect(names).toEqual(expect.arrayContaining(['admin', 'erin', 'root2']));
  });

  it('creates, lists and revokes keys; a revoked key stops working at once', async () => {
    const first = (await t.request('POST', '/v1/users', { body: { name: 'hank' } })).body.api_key.key;
    const second = await t.request('POST', '/v1/keys', { key: first, body: { name: 'laptop' } });
    expect(second.status).toBe(201);
    expect(second.body).toMatchObject({ name: 'laptop', revoked_at: null });
    expect((await t.request('GET', '/v1/users/me', { key: second.body.key })).status).toBe(200);
    expect((await t.request('GET', '/v1/keys', { key: first })).body.map((k: any) => k.name)).toEqual(['default', 'laptop']);

    const revoked = await t.request('DELETE', `/v1/keys/${second.body.id}`, { key: first });
    expect(revoked.status).toBe(200);
    expect(revoked.body.revoked_at).not.toBeNull();
    const after = await t.request('GET', '/v1/users/me', { key: second.body.key });
    expect([after.status, after.body.code]).toEqual([401, 'OT_ERR_UNAUTHENTICATED']);

    const other = (await t.request('POST', '/v1/users', { body: { name: 'ivy' } })).body.api_key;
    const foreign = await t.request('DELETE', `/v1/keys/${other.id}`, { key: first });
    expect([foreign.status, foreign.body.code]).toEqual([404, 'OT_ERR_NOT_FOUND']);
    expect((await t.request('GET', '/v1/users/me', { key: other.key })).status).toBe(200);
    const missingName = await t.request('POST', '/v1/keys', { key: first, body: {} });
    expect([missingName.status, missingName.body.field]).toEqual([400, 'name']);
  });

  it('rate-limits failed authentications per client, while a correct key still works', async () => {
    const limited = await startTestApp({ worker: false, config: { auth_failures_per_minute: 3 } });
    try {
      for (let i = 0; i < 2; i++) {
        expect((await limited.request('GET', '/v1/users/me', { key: `otk_wrong_key_${'x'.repeat(20)}${i}` })).status).toBe(401);
      }
      const blocked = await limited.request('GET', '/v1/users/me', { key: `otk_wrong_key_${'x'.repeat(20)}9` });
      expect([blocked.status, blocked.body.code]).toEqual([429, 'OT_ERR_AUTH_RATE_LIMITED']);
      expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
      expect((await limited.request('GET', '/v1/users/me')).status).toBe(200);
      expect((await limited.request('GET', '/health', { key: null })).status).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('accepts the operator-chosen admin key (stored with scrypt) from many concurrent requests at once', async () => {
    const fresh = await startTestApp({ worker: false });
    try {
      const answers = await Promise.all(Array.from({ length: 40 }, () => fresh.request('GET', '/v1/users/me')));
      expect(answers.map((a) => a.status)).toEqual(Array(40).fill(200));
    } finally {
      await fresh.close();
    }
  });

  it('allows self-registration only when the config opens it, and only as a plain user', async () => {
    const open = await startTestApp({ worker: false, config: { open_registration: true } });
    try {
      const res = await open.request('POST', '/v1/users', { key: null, body: { name: 'selfie' } });
      expect(res.status).toBe(201);
      expect(res.body.user.role).toBe('user');
      const asAdmin = await open.request('POST', '/v1/users', { key: null, body: { name: 'sneaky', role: 'admin' } });
      expect([asAdmin.status, asAdmin.body.field]).toEqual([403, 'role']);
      const badKey = await open.request('POST', '/v1/users', { key: 'otk_not_a_real_key_000000000', body: { name: 'x1' } });
      expect(badKey.status).toBe(401);
    } finally {
      await open.close();
    }
  });
});
