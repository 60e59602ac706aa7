import { abortableSleep, FetchLike, retryingFetch } from './retrying-fetch';

/** A fetch that plays `script` in order: a status (with optional Retry-After) or 'down' (connection refused). */
function scripted(script: (number | 'down' | [number, string])[]) {
  const seen: string[] = [];
  const fetch: FetchLike = async (request) => {
    seen.push(`${request.method} ${await request.text()}`);
    const step = script.shift();
    if (step === undefined) throw new Error('script exhausted');
    if (step === 'down') throw new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } });
    const [status, retryAfter] = Array.isArray(step) ? step : [step, undefined];
    return new Response(JSON.stringify({ status }), { status, headers: retryAfter ? { 'retry-after': retryAfter } : {} });
  };
  return { fetch, seen };
}

function recorder() {
  const waits: number[] = [];
  return { waits, sleep: async (ms: number) => void waits.push(ms) };
}

describe('retryingFetch', () => {
  it('retries connection failures and 503 until an answer comes, sending the same request each time', async () => {
    const { fetch, seen } = scripted(['down', 503, 200]);
    const { waits, sleep } = recorder();
    const res = await retryingFetch(fetch, { baseDelayMs: 10 }, sleep)(new Request('http://x/y', { method: 'POST', body: 'same body' }));
    expect(res.status).toBe(200);
    expect(seen).toEqual(['POST same body', 'POST same body', 'POST same body']);
    expect(waits).toHaveLength(2);
  });

  it('returns the last answer, or throws the last connection error, when retries run out', async () => {
    const a = scripted([503, 503, 503]);
    expect((await retryingFetch(a.fetch, { retries: 2 }, recorder().sleep)(new Request('http://x/'))).status).toBe(503);
    expect(a.seen).toHaveLength(3);
    const b = scripted(['down', 'down']);
    await expect(retryingFetch(b.fetch, { retries: 1 }, recorder().sleep)(new Request('http://x/'))).rejects.toThrow('fetch failed');
    expect(b.seen).toHaveLength(2);
  });

  it('waits what Retry-After says on a 429, and does not retry a 429 without it', async () => {
    const a = scripted([[429, '2'], 200]);
    const { waits, sleep } = recorder();
    expect((await retryingFetch(a.fetch, {}, sleep)(new Request('http://x/'))).status).toBe(200);
    expect(waits).toEqual([2000]);
    const b = scripted([429, 200]);
    expect((await retryingFetch(b.fetch, {}, recorder().sleep)(new Request('http://x/'))).status).toBe(429);
  });

  it('does not retry client errors', async () => {
    const a = scripted([404, 200]);
    expect((await retryingFetch(a.fetch, {}, recorder().sleep)(new Request('http://x/'))).status).toBe(404);
    expect(a.seen).toHaveLength(1);
  });

  it('stops waiting and does not retry once the request is aborted', async () => {
    const controller = new AbortController();
    const { fetch, seen } = scripted(['down', 200]);
    const pending = retryingFetch(fetch, { baseDelayMs: 60_000 })(new Request('http://x/', { signal: controller.signal }));
    await new Promise((r) => setTimeout(r, 0)); // the first attempt has failed; the backoff wait has begun
    controller.abort(new Error('stop'));
    await expect(pending).rejects.toThrow('stop');
    expect(seen).toHaveLength(1);
  });
});

describe('abortableSleep', () => {
  it('rejects at once with the reason of an already aborted signal', async () => {
    await expect(abortableSleep(60_000, AbortSignal.abort(new Error('gone')))).rejects.toThrow('gone');
  });
});
