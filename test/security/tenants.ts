import type { AppConfigValues } from '../../src/config/settings';
import { startTestApp, type TestApp } from '../support/test-app';

/** A server with two plain users, A (alice) and B (bob), as the attacks in SECURITY.md assume. */
export interface Tenants {
  t: TestApp;
  alice: string;
  bob: string;
}

export async function startTenants(opts: { worker?: boolean; config?: Partial<Record<keyof AppConfigValues, unknown>> } = {}): Promise<Tenants> {
  const t = await startTestApp({ worker: opts.worker ?? false, config: opts.config });
  const key = async (name: string) => (await t.request('POST', '/v1/users', { body: { name } })).body.api_key.key as string;
  return { t, alice: await key('alice'), bob: await key('bob') };
}

/** A protocol route of the server's own environments, called as a tenant. */
export function episodeCall(t: TestApp, key: string, env: string) {
  return (method: string, path: string, body?: unknown) => t.request(method, `/v1/environments/${env}/protocol${path}`, { key, body });
}
