import { AppError } from '../core/app-error';
import { KeyCheckQueue } from './key-check-queue';

/** A check that finishes when the test says so. */
function gate<T>(value: T) {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  let started = false;
  return {
    check: async () => {
      started = true;
      await opened;
      return value;
    },
    open,
    get started() {
      return started;
    },
  };
}

describe('KeyCheckQueue', () => {
  it('runs at most `concurrency` checks; the next ones wait their turn, in order, and then run', async () => {
    const queue = new KeyCheckQueue<string>({ concurrency: 2, maxQueued: 10, timeoutMs: 60_000 });
    const gates = ['a', 'b', 'c', 'd'].map(gate);
    const results = gates.map((g, i) => queue.run(`k${i}`, g.check));
    await Promise.resolve();
    expect(gates.map((g) => g.started)).toEqual([true, true, false, false]);
    expect(queue.queued).toBe(2);
    gates[1].open();
    await results[1];
    await new Promise((r) => setImmediate(r));
    expect(gates.map((g) => g.started)).toEqual([true, true, true, false]);
    for (const g of gates) g.open();
    expect(await Promise.all(results)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('shares one check between requests with the same key', async () => {
    const queue = new KeyCheckQueue<string>({ concurrency: 1, maxQueued: 0, timeoutMs: 1000 });
    const g = gate('same');
    const a = queue.run('k', g.check);
    const b = queue.run('k', async () => 'never');
    g.open();
    expect([await a, await b]).toEqual(['same', 'same']);
  });

  it('answers 503 OT_ERR_AUTH_BUSY naming the setting when the queue is full, and when the wait runs out', async () => {
    const queue = new KeyCheckQueue<string>({ concurrency: 1, maxQueued: 1, timeoutMs: 50 });
    const running = gate('running');
    void queue.run('a', running.check);
    const waiting = queue.run('b', async () => 'b');
    const full = await queue.run('c', async () => 'c').catch((e: AppError) => e);
    expect(full).toBeInstanceOf(AppError);
    expect([(full as AppError).code, (full as AppError).status, (full as AppError).retryAfter]).toEqual(['OT_ERR_AUTH_BUSY', 503, 1]);
    expect((full as AppError).message).toContain('auth_key_check_queue');
    const late = await waiting.catch((e: AppError) => e);
    expect([(late as AppError).code, (late as AppError).retryAfter]).toEqual(['OT_ERR_AUTH_BUSY', 1]);
    expect((late as AppError).message).toContain('auth_key_check_timeout_seconds');
    expect(queue.queued).toBe(0);
    running.open();
  });
});
