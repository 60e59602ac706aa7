import { withWandbCredentials } from './wandb-credentials';

const train = (trainer: Record<string, unknown>) => ({ kind: 'train', environment: { id: 'math' }, trainer });

describe('withWandbCredentials', () => {
  const env = { WANDB_API_KEY: 'wb-key-0123456789', WANDB_BASE_URL: 'https://wandb.example/', WANDB_ENTITY: 'team' };

  it("puts the shell's WANDB_API_KEY, WANDB_BASE_URL and WANDB_ENTITY into a train job that logs to wandb, and says so without the key", () => {
    const { spec, notes } = withWandbCredentials(train({ logger: ['console', 'wandb'], project_name: 'p' }), env);
    expect(spec.trainer).toEqual({ logger: ['console', 'wandb'], project_name: 'p', wandb: { api_key: 'wb-key-0123456789', base_url: 'https://wandb.example', entity: 'team' } });
    expect(notes).toEqual([
      'W&B: the run streams to the W&B at https://wandb.example (entity team) with WANDB_API_KEY from this shell; the server keeps the key apart and never shows it',
    ]);
    // A single logger name (verl accepts a string) counts too.
    expect(withWandbCredentials(train({ logger: 'wandb' }), { WANDB_API_KEY: 'k' }).spec.trainer).toEqual({ logger: 'wandb', wandb: { api_key: 'k' } });
  });

  it('never overrides what the spec says, and leaves other jobs alone', () => {
    const own = train({ logger: ['wandb'], wandb: { api_key: 'spec-key', entity: 'me' } });
    expect(withWandbCredentials(own, env)).toEqual({ spec: own, notes: [] });
    const partial = withWandbCredentials(train({ logger: ['wandb'], wandb: { entity: 'me' } }), env).spec.trainer as { wandb: unknown };
    expect(partial.wandb).toEqual({ api_key: 'wb-key-0123456789', base_url: 'https://wandb.example', entity: 'me' });
    for (const spec of [train({ logger: ['console'] }), train({}), { kind: 'inference', trainer: { logger: ['wandb'] } }, { kind: 'sleep', steps: 1 }]) {
      expect(withWandbCredentials(spec, env)).toEqual({ spec, notes: [] });
    }
  });

  it('keeps the key home under WANDB_MODE=offline, and says the run is offline without a key', () => {
    const spec = train({ logger: ['wandb'] });
    const offline = withWandbCredentials(spec, { ...env, WANDB_MODE: 'offline' });
    expect(offline.spec).toBe(spec);
    expect(offline.notes[0]).toMatch(/WANDB_MODE=offline: the run is written offline only/);
    const none = withWandbCredentials(spec, {});
    expect(none.spec).toBe(spec);
    expect(none.notes[0]).toMatch(/no WANDB_API_KEY in this shell: the run is written offline only/);
  });
});
