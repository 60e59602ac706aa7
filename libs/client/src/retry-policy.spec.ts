import { backoffDelay, parseRetryAfter, retryDelay } from './retry-policy';

const half = () => 0.5;
const res = (status: number, retryAfter: string | null = null) => ({ kind: 'response' as const, status, retryAfter });

describe('retryDelay', () => {
  it('retries connection failures with a growing, capped backoff, then gives up', () => {
    const opts = { retries: 5, baseDelayMs: 100, maxDelayMs: 1000 };
    const delays = [0, 1, 2, 3, 4].map((n) => retryDelay({ kind: 'network' }, n, opts, 0, half));
    expect(delays).toEqual([75, 150, 300, 600, 750]);
    expect(retryDelay({ kind: 'network' }, 5, opts, 0, half)).toBeNull();
  });

  it('retries transient 5xx, honouring Retry-After, but not 501', () => {
    expect(retryDelay(res(503), 0, { baseDelayMs: 100 }, 0, half)).toBe(75);
    expect(retryDelay(res(502, '2'), 0)).toBe(2000);
    expect(retryDelay(res(500), 0, {}, 0, half)).not.toBeNull();
    expect(retryDelay(res(501), 0)).toBeNull();
  });

  it('retries 429 only when the server says how long to wait, and not too long', () => {
    expect(retryDelay(res(429, '1'), 0)).toBe(1000);
    expect(retryDelay(res(429), 0)).toBeNull();
    expect(retryDelay(res(429, '60'), 0, { maxRetryAfterMs: 30_000 })).toBeNull();
    expect(retryDelay(res(503, '60'), 0, { maxRetryAfterMs: 30_000 })).toBeNull();
  });

  it('never retries success or client errors, and not at all with retries: 0', () => {
    for (const status of [200, 201, 204, 400, 401, 403, 404, 409, 413]) expect(retryDelay(res(status), 0)).toBeNull();
    expect(retryDelay({ kind: 'network' }, 0, { retries: 0 })).toBeNull();
  });
});

describe('backoffDelay', () => {
  it('keeps between half and all of the exponential delay', () => {
    expect(backoffDelay(3, { baseDelayMs: 100, maxDelayMs: 10_000 }, () => 0)).toBe(400);
    expect(backoffDelay(3, { baseDelayMs: 100, maxDelayMs: 10_000 }, () => 1)).toBe(800);
    expect(backoffDelay(30, { baseDelayMs: 100, maxDelayMs: 2_000 }, () => 1)).toBe(2000);
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds and HTTP dates, and nothing else', () => {
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter(' 0 ')).toBe(0);
    const now = Date.parse('2026-10-21T07:27:58Z');
    expect(parseRetryAfter('Wed, 21 Oct 2026 07:28:00 GMT', now)).toBe(2000);
    expect(parseRetryAfter('Wed, 21 Oct 2026 07:27:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(null)).toBeNull();
    expect(parseRetryAfter('-1')).toBeNull();
    expect(parseRetryAfter('soon')).toBeNull();
  });
});
