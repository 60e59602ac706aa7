import { createServer, type AddressInfo } from 'node:net';

/**
 * A TCP port on 127.0.0.1 that nothing listens on right now: the OS picks a free one, which is then
 * released. For "the server is down" tests, and for binaries that need a port given up front.
 */
export async function unusedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}
