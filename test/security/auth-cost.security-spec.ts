import { createHook } from 'node:async_hooks';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { randomBytes } from 'node:crypto';
import { generateApiKey } from '../../src/auth/api-key';
import { AuthFailureLimiter } from '../../src/auth/auth-failure-limiter';
import { startTestApp, type TestApp } from '../support/test-app';
import { startTenants, type Tenants } from './tenants';

/**
 * Counts the slow hashes (scrypt) started in this process from now until `stop`. async_hooks sees every
 * `crypto.scrypt` call as a `SCRYPTREQUEST`, whatever code makes it, so this counts without knowing how
 * the server checks keys.
 */
function watchScrypts(): { readonly count: number; stop(): void } {
  let count = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'SCRYPTREQUEST') count += 1;
    },
  }).enable();
  return {
    get count() {
      return count;
    },
    stop: () => hook.disable(),
  };
}

async function scrypts(run: () => Promise<unknown>): Promise<number> {
  const watch = watchScrypts();
  try {
    await run();
  } finally {
    watch.stop();
  }
  return watch.count;
}

const OTHER_ADMIN_KEY = 'otk_a_second_operator_key_987654321';
const b64 = (n: number) => randomBytes(n).toString('base64url').slice(0, n);

/** Bad keys of every shape: malformed, a generated key with a wrong checksum or an unknown id, ones shaped like keys issued before ids or chosen by an operator. */
function bogusKeys(n: number): string[] {
  return Array.from({ length: n }, (_, i) => {
    const generated = generateApiKey().key;
    return [`otk_short${i}`, generated.slice(0, -1) + (generated.endsWith('a') ? 'b' : 'a'), generated, `tml-${generateApiKey().key}`, `otk_${b64(43)}`, `tml-otk_${b64(30)}`][
      i % 6
    ];
  });
}

function from(t: TestApp, key: string, remoteAddress: string) {
  return t.app.inject({ method: 'GET', url: '/v1/users/me', headers: { authorization: `Bearer ${key}` }, remoteAddress });
}

/**
 * Issue 23, attack 4: bad keys made the server run scrypt (the limiter ran after verification, four
 * slow checks at once, and a valid operator-chosen key was refused while they ran), and the limiter's
 * table grew with every distinct key and was scanned on every new one.
 */
describe('security: a bad key costs no slow hash, and valid keys get through a flood of them', () => {
  let s: Tenants;
  /** A server whose database also holds an operator key it was not started with: bad keys may cost a scrypt here. */
  let restarted: TestApp;
  let home: string;

  beforeAll(async () => {
    s = await startTenants({ config: { auth_failures_per_minute: 5 } });
    home = mkdtempSync(join(tmpdir(), 'opentinker-auth-cost-'));
    await (await startTestApp({ worker: false, home })).close();
    restarted = await startTestApp({ worker: false, home, config: { admin_key: OTHER_ADMIN_KEY, auth_failures_per_minute: 5, auth_key_check_timeout_seconds: 120 } });
  });
  afterAll(async () => {
    await s.t.close();
    await restarted.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('4. bad keys of every shape, from 120 addresses, are refused without a single scrypt', async () => {
    const keys = bogusKeys(120);
    let answers: number[] = [];
    const count = await scrypts(async () => {
      answers = await Promise.all(keys.map(async (key, i) => (await from(s.t, key, `10.4.${i >> 8}.${i & 255}`)).statusCode));
    });
    expect(answers).toEqual(Array(120).fill(401));
    expect(count).toBe(0);
    for (const key of [s.alice, s.bob, s.t.adminKey]) expect((await s.t.request('GET', '/v1/users/me', { key })).status).toBe(200);
  });

  it('4. an address over its limit costs no scrypt, even while an operator key this process has not verified exists', async () => {
    const address = '10.5.0.1';
    const first = await Promise.all(bogusKeys(5).map((key) => from(restarted, `otk_${b64(43)}${key.length}`, address)));
    expect(first.map((r) => r.statusCode)).toContain(429);
    const answers: number[] = [];
    const count = await scrypts(async () => {
      for (let i = 0; i < 20; i++) answers.push((await from(restarted, `otk_${b64(43)}`, address)).statusCode);
    });
    expect(answers).toEqual(Array(20).fill(429));
    expect(count).toBe(0);
    // The key this server was started with is recognised without a slow check, from that address too.
    expect((await from(restarted, OTHER_ADMIN_KEY, address)).statusCode).toBe(200);
  });

  it('4. valid operator-chosen keys are accepted while 24 bad keys take every slow check', async () => {
    const watch = watchScrypts();
    const bad = Promise.all(bogusKeys(24).map((_, i) => from(restarted, `otk_${b64(40)}`, `10.6.0.${i + 1}`)));
    // The valid keys come once the bad ones have started slow checks.
    while (watch.count < 2) await new Promise((resolve) => setTimeout(resolve, 1));
    watch.stop();
    // restarted.adminKey is the key of the first start: stored with scrypt, never verified by this process.
    const valid = await Promise.all([restarted.request('GET', '/v1/users/me'), restarted.request('GET', '/v1/users/me', { key: OTHER_ADMIN_KEY })]);
    expect(valid.map((r) => [r.status, r.body.role])).toEqual([
      [200, 'admin'],
      [200, 'admin'],
    ]);
    expect((await bad).map((r) => r.statusCode)).toEqual(Array(24).fill(401));
  });

  it("4. the limiter's memory stays the same after 200,000 distinct failing keys from 200,000 addresses", () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const limiter = s.t.app.get(AuthFailureLimiter);
    const heap = () => {
      gc();
      return process.memoryUsage().heapUsed;
    };
    const before = heap();
    for (let i = 0; i < 200_000; i++) limiter.recordFailure([`addr:10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, `key:${i.toString(36).padStart(8, 'x')}`]);
    const grown = heap() - before;
    expect(grown).toBeLessThan(4 * 1024 * 1024);
  });
});
