import { episodeCall, startTenants, type Tenants } from './tenants';

/** Attack 7 of SECURITY.md: episodes on the server's protocol routes were shared by every tenant. */
describe('security: episodes belong to the tenant that created them', () => {
  let s: Tenants;
  beforeAll(async () => {
    s = await startTenants({ config: { max_episodes_per_user: 3 } });
  });
  afterAll(() => s.t.close());

  it('7. another tenant cannot step or delete an episode, and sees it as not found', async () => {
    const a = episodeCall(s.t, s.alice, 'math');
    const b = episodeCall(s.t, s.bob, 'math');
    const created = await a('POST', '/v1/episodes', { seed: 1, split: 'test', index: 0 });
    expect(created.status).toBe(201);
    const id = created.body.episode_id;
    const step = await b('POST', `/v1/episodes/${id}/step`, { action: '\\boxed{1}' });
    expect([step.status, step.body.code]).toEqual([404, 'ENV_EPISODE_CLOSED']);
    expect((await b('DELETE', `/v1/episodes/${id}`)).status).toBe(404);
    const mine = await a('POST', `/v1/episodes/${id}/step`, { action: '\\boxed{1}' });
    expect([mine.status, mine.body.done]).toEqual([200, true]);
  });

  it("7. one tenant's episodes hit their own cap, not everyone's", async () => {
    const b = episodeCall(s.t, s.bob, 'gomoku');
    for (let i = 0; i < 3; i++) expect((await b('POST', '/v1/episodes', { seed: i })).status).toBe(201);
    const over = await b('POST', '/v1/episodes', { seed: 9 });
    expect([over.status, over.body.code]).toEqual([429, 'ENV_CAPACITY']);
    expect(over.body.message).toMatch(/max_episodes_per_user/);
    expect((await episodeCall(s.t, s.alice, 'gomoku')('POST', '/v1/episodes', { seed: 1 })).status).toBe(201);
  });
});
