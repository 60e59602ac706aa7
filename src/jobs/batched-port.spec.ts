import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { BatchedPort } from './batched-port';

describe('BatchedPort', () => {
  let a: MessagePort;
  let b: MessagePort;
  const received: unknown[][] = [];
  beforeEach(() => {
    ({ port1: a, port2: b } = new MessageChannel());
    received.length = 0;
    b.on('message', (m: unknown[]) => received.push(m));
  });
  afterEach(() => {
    a.close();
    b.close();
  });
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  const delivered = async (n: number) => {
    for (let i = 0; i < 100 && received.length < n; i++) await new Promise((resolve) => setTimeout(resolve, 5));
  };

  it('posts what is sent in one turn as one message, in order, and the next turn as another', async () => {
    const port = new BatchedPort<number>(a);
    port.send(1);
    port.send(2);
    port.send(3);
    await turn();
    port.send(4);
    await delivered(2);
    expect(received).toEqual([[1, 2, 3], [4]]);
  });

  it('moves the buffers it is given with their messages', async () => {
    const port = new BatchedPort<{ body: Uint8Array }>(a);
    const one = new Uint8Array([1, 2, 3]);
    const two = new Uint8Array([4]);
    port.send({ body: one }, one.buffer);
    port.send({ body: two }, two.buffer);
    await delivered(1);
    expect(received[0]).toEqual([{ body: new Uint8Array([1, 2, 3]) }, { body: new Uint8Array([4]) }]);
    // Transferred, not copied: the sender's buffers are detached.
    expect(one.byteLength).toBe(0);
    expect(two.byteLength).toBe(0);
  });
});
