import { OpenTinkerError } from './errors';
import { watchJobEvents } from './job-watcher';
import type { FetchLike } from './retrying-fetch';
import { Transport } from './transport';
import type { JobEvent } from './types';

type Reply = { status: number; body?: unknown } | { frames: string[]; hang?: boolean } | 'down';

const frame = (id: number, type = 'progress', data: object = { step: id, total: 10, message: null, time: 't' }) => `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
const END = 'event: end\ndata: {"state":"succeeded"}\n\n';

/** A server of scripted replies, one per connection; records each request's Last-Event-ID. */
function fakeServer(replies: Reply[]) {
  const lastIds: (string | null)[] = [];
  const signals: AbortSignal[] = [];
  const fetch: FetchLike = async (request) => {
    lastIds.push(request.headers.get('last-event-id'));
    signals.push(request.signal);
    const reply = replies.shift();
    if (!reply || reply === 'down') throw new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } });
    if ('status' in reply) return Response.json(reply.body ?? {}, { status: reply.status });
    const bytes = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const f of reply.frames) controller.enqueue(bytes.encode(f));
        if (!reply.hang) controller.close();
        request.signal.addEventListener('abort', () => controller.error(request.signal.reason));
      },
    });
    return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
  };
  return { transport: new Transport({ baseUrl: 'http://fake', apiKey: 'otk_x', fetch }), lastIds, signals };
}

async function collect(iterator: AsyncIterable<JobEvent>): Promise<JobEvent[]> {
  const out: JobEvent[] = [];
  for await (const e of iterator) out.push(e);
  return out;
}

const fast = { backoff: { baseDelayMs: 1, maxDelayMs: 2 } };

describe('watchJobEvents', () => {
  it('reconnects with Last-Event-ID after a dropped stream and passes a replayed event on once', async () => {
    const server = fakeServer([{ frames: [frame(1), frame(2), frame(3).slice(0, 12)] }, { frames: [frame(2), frame(3), frame(4), END] }]);
    const events = await collect(watchJobEvents(server.transport, 'job', fast));
    expect(events.map((e) => e.id ?? e.type)).toEqual([1, 2, 3, 4, 'end']);
    expect(server.lastIds).toEqual([null, '2']);
    expect(events[4]).toEqual({ type: 'end', data: { state: 'succeeded' } });
  });

  it('starts after a given id and passes unknown event types through', async () => {
    const server = fakeServer([{ frames: [frame(8, 'episode', { turn: 1 }), END] }]);
    const events = await collect(watchJobEvents(server.transport, 'job', { after: 7 }));
    expect(server.lastIds).toEqual(['7']);
    expect(events[0]).toEqual({ type: 'other', event: 'episode', id: 8, data: { turn: 1 } });
  });

  it("reconnects when the stream goes silent, and follows the server's retry delay", async () => {
    const server = fakeServer([{ frames: ['retry: 1\n\n', frame(1)], hang: true }, { frames: [frame(2), END] }]);
    const reconnects: unknown[] = [];
    const events = await collect(watchJobEvents(server.transport, 'job', { idleTimeoutMs: 30, onReconnect: (i) => reconnects.push(i.delayMs) }));
    expect(events.map((e) => e.type)).toEqual(['progress', 'progress', 'end']);
    expect(reconnects).toEqual([1]);
    expect(server.lastIds).toEqual([null, '1']);
  });

  it('fails at once on a client error such as an unknown job', async () => {
    const server = fakeServer([{ status: 404, body: { statusCode: 404, code: 'OT_ERR_NOT_FOUND', message: 'Job x not found', field: 'id' } }]);
    const failure = collect(watchJobEvents(server.transport, 'x', fast));
    await expect(failure).rejects.toBeInstanceOf(OpenTinkerError);
    await expect(failure).rejects.toMatchObject({ code: 'OT_ERR_NOT_FOUND', status: 404, field: 'id' });
    expect(server.lastIds).toHaveLength(1);
  });

  it('gives up after maxReconnects attempts that bring nothing, with the connection error', async () => {
    const server = fakeServer(['down', { status: 503, body: 'busy' }, 'down', 'down']);
    const attempts: number[] = [];
    await expect(collect(watchJobEvents(server.transport, 'job', { ...fast, maxReconnects: 3, onReconnect: (i) => attempts.push(i.attempt) }))).rejects.toMatchObject({
      code: 'OT_ERR_CONNECTION',
      message: expect.stringContaining('http://fake'),
    });
    expect(attempts).toEqual([1, 2, 3]);
  });

  it('closes the connection when the consumer stops early', async () => {
    const server = fakeServer([{ frames: [frame(1), frame(2)], hang: true }]);
    for await (const event of watchJobEvents(server.transport, 'job')) {
      expect(event.id).toBe(1);
      break;
    }
    // Aborting the request is what closes a fetch's connection.
    expect(server.signals[0].aborted).toBe(true);
  });

  it("rejects with the signal's reason when aborted while waiting for events", async () => {
    const server = fakeServer([{ frames: [frame(1)], hang: true }]);
    const controller = new AbortController();
    const seen: JobEvent[] = [];
    const watching = (async () => {
      for await (const e of watchJobEvents(server.transport, 'job', { signal: controller.signal })) {
        seen.push(e);
        controller.abort(new Error('user stopped'));
      }
    })();
    await expect(watching).rejects.toThrow('user stopped');
    expect(seen).toHaveLength(1);
  });

  it('reports an event that is not JSON', async () => {
    const server = fakeServer([{ frames: ['id: 1\nevent: log\ndata: {oops\n\n'] }]);
    await expect(collect(watchJobEvents(server.transport, 'job'))).rejects.toMatchObject({ code: 'OT_ERR_BAD_RESPONSE' });
  });
});
