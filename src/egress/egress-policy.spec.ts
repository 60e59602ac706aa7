import { addressAllowed, checkRemoteUrl, embeddedIpv4, ipv6Bytes, WANDB_URL, type UrlPolicy } from './egress-policy';

const user: UrlPolicy = { allow: [], allowPublic: true, allowLoopback: false };
const admin: UrlPolicy = { ...user, allowLoopback: true };
const allowed = (policy: UrlPolicy, address: string, port = 80) => addressAllowed(policy, address, address, port);

describe('egress policy: addresses', () => {
  it('refuses loopback, private, link-local and mapped addresses by default; allows public ones', () => {
    for (const a of ['127.0.0.1', '10.1.2.3', '172.16.0.9', '192.168.1.1', '169.254.169.254', '0.0.0.0', '::1', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '100.64.0.1']) {
      expect([a, allowed(user, a)]).toEqual([a, false]);
    }
    expect(addressAllowed(user, 'example.com', '93.184.215.14', 443)).toBe(true);
    expect(addressAllowed(user, 'example.com', '2606:2800:21f:cb07:6820:80da:af6b:8b2c', 443)).toBe(true);
    expect(addressAllowed({ ...user, allowPublic: false }, 'example.com', '93.184.215.14', 443)).toBe(false);
  });

  it('judges an IPv6 address that carries an IPv4 one by that IPv4 address too, in every form', () => {
    const forms: Array<[string, string]> = [
      ['::7f00:1', 'IPv4-compatible ::127.0.0.1'],
      ['::127.0.0.1', 'IPv4-compatible, dotted'],
      ['::a9fe:a9fe', 'IPv4-compatible ::169.254.169.254'],
      ['::ffff:7f00:1', 'IPv4-mapped'],
      ['::ffff:10.0.0.1', 'IPv4-mapped, dotted'],
      ['::ffff:0:7f00:1', 'IPv4-translated (SIIT) ::ffff:0:127.0.0.1'],
      ['::ffff:0:192.168.0.1', 'IPv4-translated, dotted'],
      ['64:ff9b::7f00:1', 'NAT64 of 127.0.0.1'],
      ['64:ff9b::a9fe:a9fe', 'NAT64 of 169.254.169.254'],
      ['64:ff9b:1::5db8:d70e', 'local-use NAT64 (RFC 8215), whatever it carries'],
      ['2002:7f00:1::1', '6to4 of 127.0.0.1'],
      ['2002:c0a8:1::', '6to4 of 192.168.0.1'],
      ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'Teredo, client 127.0.0.1 (inverted)'],
      ['2001:0:a00:1:8000:63bf:a2b8:28f1', 'Teredo, server 10.0.0.1'],
      ['fec0::1', 'site-local'],
      ['3fff::1', 'documentation (RFC 9637)'],
      ['5f00::1', 'SRv6 SIDs'],
      ['::', 'unspecified'],
      ['fe80::1%eth0', 'link-local with a zone'],
    ];
    for (const [a, what] of forms) expect([what, allowed(user, a)]).toEqual([what, false]);
    // The same forms around a public IPv4 address are as public as it is.
    for (const a of ['::ffff:93.184.215.14', '64:ff9b::5db8:d70e', '2002:5db8:d70e::1']) expect([a, allowed(user, a)]).toEqual([a, true]);
  });

  it("lets the admin reach this host's loopback in any form the host's stack delivers there, not loopback behind a translator", () => {
    for (const a of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1', '::127.0.0.1', '::ffff:0:127.0.0.1']) expect([a, allowed(admin, a)]).toEqual([a, true]);
    for (const a of ['64:ff9b::7f00:1', '2002:7f00:1::', '2001:0:4136:e378:8000:63bf:80ff:fffe', '10.0.0.1']) expect([a, allowed(admin, a)]).toEqual([a, false]);
  });

  it('opens hosts, ranges and ports the operator lists, an IPv4 entry matching its mapped forms', () => {
    const op: UrlPolicy = { ...user, allow: ['10.0.0.0/8', 'envs.internal:8088', '127.0.0.1:8090', '[::1]:9000'] };
    expect(addressAllowed(op, '10.9.9.9', '10.9.9.9', 1)).toBe(true);
    expect(addressAllowed(op, 'envs.internal', '192.168.0.5', 8088)).toBe(true);
    expect(addressAllowed(op, 'envs.internal', '192.168.0.5', 8089)).toBe(false);
    expect(addressAllowed(op, '127.0.0.1', '127.0.0.1', 8090)).toBe(true);
    expect(addressAllowed(op, '::ffff:127.0.0.1', '::ffff:127.0.0.1', 8090)).toBe(true);
    expect(addressAllowed(op, '127.0.0.1', '127.0.0.1', 8091)).toBe(false);
    expect(addressAllowed(op, '::1', '::1', 9000)).toBe(true);
    // An entry for an inside address does not open a translator's address that carries it.
    expect(addressAllowed(op, '64:ff9b::a00:1', '64:ff9b::a00:1', 1)).toBe(false);
  });

  it('reads IPv6 text into bytes and finds the IPv4 addresses it carries', () => {
    expect([...ipv6Bytes('::ffff:1.2.3.4')!]).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4]);
    expect([...ipv6Bytes('1::2')!]).toEqual([0, 1, ...new Array(12).fill(0), 0, 2]);
    expect(ipv6Bytes('1.2.3.4')).toBeNull();
    expect(embeddedIpv4('::1')).toBeNull();
    expect(embeddedIpv4('2606:2800::1')).toBeNull();
    expect(embeddedIpv4('2001:0:4136:e378:8000:63bf:3fff:fdd2')).toEqual({ addresses: ['65.54.227.120', '192.0.2.45'], local: false });
  });
});

describe('egress policy: URLs at submission', () => {
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

  it('sees IPv4 shorthands and IPv6 forms as the address the URL parser makes of them', async () => {
    for (const url of [
      'http://2130706433/',
      'http://0177.0.0.1/',
      'http://0x7f.1/',
      'http://0x7f000001/',
      'http://127.1/',
      'http://0/',
      'http://[::127.0.0.1]/',
      'http://[::ffff:0:127.0.0.1]/',
      'http://[64:ff9b::127.0.0.1]/',
      'http://[2002:7f00:1::]/',
      'http://[fec0::1]/',
    ]) {
      await expect(checkRemoteUrl(url, user)).rejects.toThrow(/is not an environment server this server may reach/);
    }
  });
});
