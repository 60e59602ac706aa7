import { isIP, type Socket } from 'node:net';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { addressAllowed, ENVIRONMENT_URL, parseRemoteUrl, refused, UrlNotAllowedError, type RemoteUrlUse, type UrlPolicy } from './egress-policy';

/** Thrown (as a `fetch failed` cause) for a redirect the caller did not ask to see. */
export class RedirectRefusedError extends Error {
  readonly code = 'REDIRECT_REFUSED';
}

/**
 * The one client for requests a tenant can aim (remote environments of both protocols, a self-hosted
 * W&B, anything added later): a `fetch` that
 *
 * - **follows no redirect.** A caller that asks `redirect: 'manual'` gets the 3xx answer itself and
 *   treats it as an error (the env SDK's client and the W&B stream do); any other caller gets a
 *   `fetch failed` whose cause ({@link RedirectRefusedError}) names the spec field. A redirect would
 *   send the request, body and credentials included, to an address nobody checked.
 * - **checks the address of every connection** it opens, in the connector: an IP literal before it
 *   connects, a name on each DNS lookup (all addresses the connection may use; a name that resolves
 *   inside later, DNS rebinding, is refused too), and the address the socket actually connected to.
 *   A refused connection is a `fetch failed` whose cause is a {@link UrlNotAllowedError}, the same
 *   whatever listens there.
 *
 * It takes a URL (string or `URL`) and `init`, not a `Request`.
 */
export function egressFetch(policy: UrlPolicy, use: RemoteUrlUse = ENVIRONMENT_URL): typeof fetch {
  const agent = new Agent({ connect: checkedConnector(policy, use) });
  return (async (input: string | URL, init: RequestInit = {}) => {
    let url: URL;
    try {
      if (typeof input !== 'string' && !(input instanceof URL)) throw new TypeError('egressFetch takes a URL, not a Request');
      url = parseRemoteUrl(String(input), use);
    } catch (error) {
      throw new TypeError('fetch failed', { cause: error });
    }
    const res = await undiciFetch(url, { ...(init as object), redirect: 'manual', dispatcher: agent } as Parameters<typeof undiciFetch>[1]);
    if (res.status < 300 || res.status >= 400 || init.redirect === 'manual') return res as unknown as Response;
    await res.body?.cancel().catch(() => undefined);
    throw new TypeError('fetch failed', {
      cause: new RedirectRefusedError(`${use.field}: ${url.origin} answered with a redirect (HTTP ${res.status}); redirects are not followed`),
    });
  }) as unknown as typeof fetch;
}

type Connector = buildConnector.connector;

/**
 * undici's own connector, wrapped: a per-port base connector whose DNS lookup drops addresses the policy
 * refuses, an IP literal checked before any packet leaves, and the connected socket's peer checked last.
 */
function checkedConnector(policy: UrlPolicy, use: RemoteUrlUse): Connector {
  const byPort = new Map<number, Connector>();
  return (options, callback) => {
    const hostname = options.hostname.replace(/^\[|\]$/g, '');
    const port = Number(options.port) || (options.protocol === 'https:' ? 443 : 80);
    const refuse = () => callback(refused(options.port ? `${options.hostname}:${options.port}` : options.hostname, use), null);
    if (isIP(hostname) && !addressAllowed(policy, hostname, hostname, port)) return refuse();
    let base = byPort.get(port);
    if (!base) {
      base = buildConnector({ lookup: checkedLookup(policy, port) } as buildConnector.BuildOptions);
      byPort.set(port, base);
    }
    base(options, (error, socket) => {
      if (error || !socket) return callback(error ?? new Error('no socket'), null);
      const peer = (socket as Socket).remoteAddress;
      if (!peer || !addressAllowed(policy, hostname, peer, port)) {
        socket.destroy();
        return refuse();
      }
      callback(null, socket);
    });
  };
}

type LookupCallback = (error: Error | null, address: string | LookupAddress[], family?: number) => void;

function checkedLookup(policy: UrlPolicy, port: number) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, []);
      const ok = addresses.filter((a) => addressAllowed(policy, hostname, a.address, port));
      if (ok.length === 0) return callback(new UrlNotAllowedError(`${hostname} resolves to an address this server may not reach`), []);
      if (options.all) return callback(null, ok);
      callback(null, ok[0].address, ok[0].family);
    });
  };
}
