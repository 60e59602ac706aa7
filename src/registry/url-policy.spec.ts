import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { addressAllowed, checkRemoteUrl, policyFetch, WANDB_URL, type UrlPolicy } from './url-policy';

const user: UrlPolicy = { allow: [], allowPublic: true, allowLoopback: false };

describe('environment URL policy', () => {
  it('refuses loopback, private, link-local and mapped addresses by default; allows public ones', () => {
    for (const a of ['127.0.0.1', '10.1.2.3', '172.16.0.9', '192.168.1.1', '169.254.169.254', '0.0.0.0', '::1', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '100.64.0.1']) {
      expect([a, addressAllowed(user, a, a, 80)]).toEqual([a, false]);
    }
    expect(addressAllowed(user, 'example.com', '93.184.215.14', 443)).toBe(true);
    expect(addressAllowed({ ...user, allowPublic: false }, 'example.com', '93.184.215.14', 443)).toBe(false);
  });

  it('lets the admin reach loopback, and operator entries open hosts, ranges and ports', () => {
    expect(addressAllowed({ ...user, allowLoopback: true }, '127.0.0.1', '127.0.0.1', 8088)).toBe(true);
    const op: UrlPolicy = { ...user, allow: ['10.0.0.0/8', 'envs.internal:8088', '127.0.0.1:8090', '[::1]:9000'] };
    expect(addressAllowed(op, '10.9.9.9', '10.9.9.9', 1)).toBe(true);
    expect(addressAllowed(op, 'envs.internal', '192.168.0.5', 8088)).toBe(true);
    expect(addressAllowed(op, 'envs.internal', '192.168.0.5', 8089)).toBe(false);
    expect(addressAllowed(op, '127.0.0.1', '127.0.0.1', 8090)).toBe(true);
    expect(addressAllowed(op, '127.0.0.1', '127.0.0.1', 8091)).toBe(false);
    expect(addressAllowed(op, '::1', '::1', 9000)).toBe(true);
  });

  it('checks URLs before connecting: scheme, credentials, literal and resolved addresses', async () => {
    await expect(checkRemoteUrl('file:///etc/passwd', user)).rejects.toThrow(/http/);
    await expect(checkRemoteUrl('http://u:p@example.com/', user)).rejects.toThrow(/credentials/);
    await expect(checkRemoteUrl('http://169.254.169.254/latest', user)).rejects.toThrow(/169\.254\.169\.254 is not an environment server this server may reach/);
    await expect(checkRemoteUrl('http://localhost:8088', user)).rejects.toThrow(/not an environment server/);
    await expect(checkRemoteUrl('http://[::ffff:7f00:1]:80', user)).rejects.toThrow(/not an environment server/);
    // A self-hosted W&B: the same rules, in its own words.
    await expect(checkRemoteUrl('http://169.254.169.254/latest', user, WANDB_URL)).rejects.toThrow(
      /^trainer\.wandb\.base_url 169\.254\.169\.254 is not a W&B server this server may reach/,
    );
    await expect(checkRemoteUrl('http://u:p@wandb.example/', user, WANDB_URL)).rejects.toThrow('trainer.wandb.base_url must not carry credentials (use trainer.wandb.api_key)');
  });

  it('refuses at connection time what a name resolves to (the check and the connection use one lookup)', async () => {
    const server = createServer((_req, res) => res.end('{}'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      await expect(policyFetch(user)(`http://localhost:${port}/`)).rejects.toThrow();
      const ok = await policyFetch({ ...user, allowLoopback: true })(`http://localhost:${port}/`);
      expect(ok.status).toBe(200);
      await expect(policyFetch(user)(`http://127.0.0.1:${port}/`)).rejects.toThrow();
    } finally {
      server.close();
    }
  });
});
