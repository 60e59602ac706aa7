import { startTenants, type Tenants } from './tenants';

/** Attack 5 of SECURITY.md: failed logins from one address lock everyone behind it out. */
describe('security: failed authentications never lock out valid keys', () => {
  let s: Tenants;
  beforeAll(async () => {
    s = await startTenants({ config: { auth_failures_per_minute: 20 } });
  });
  afterAll(() => s.t.close());

  it('5. after 20 bad keys from an address, bad keys get 429 with Retry-After while every valid key still works', async () => {
    for (let i = 0; i < 20; i++) await s.t.request('GET', '/v1/users/me', { key: `otk_guess_${String(i).padStart(30, '0')}` });
    const bad = await s.t.request('GET', '/v1/users/me', { key: `otk_guess_${'9'.repeat(30)}` });
    expect([bad.status, bad.body.code]).toEqual([429, 'OT_ERR_AUTH_RATE_LIMITED']);
    expect(Number(bad.headers['retry-after'])).toBeGreaterThan(0);
    for (const key of [s.alice, s.bob, s.t.adminKey]) expect((await s.t.request('GET', '/v1/users/me', { key })).status).toBe(200);
  });

  it('5. guessing one key prefix from many addresses is throttled too', async () => {
    const prefix = 'otk_AAAAAAAA';
    for (let i = 0; i < 20; i++) {
      await s.t.app.inject({ method: 'GET', url: '/v1/users/me', headers: { authorization: `Bearer ${prefix}${String(i).padStart(30, 'x')}` }, remoteAddress: `10.0.0.${i + 1}` });
    }
    const res = await s.t.app.inject({ method: 'GET', url: '/v1/users/me', headers: { authorization: `Bearer ${prefix}${'y'.repeat(30)}` }, remoteAddress: '10.0.1.1' });
    expect(res.statusCode).toBe(429);
  });
});
