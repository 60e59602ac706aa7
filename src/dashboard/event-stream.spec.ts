import { followEventStream, type StreamEvent } from './public/event-stream.mjs';

/** A fetch whose answers stream `bodies` in turn, each cut into the given chunks; records the request headers. */
function fakeFetch(bodies: string[][]) {
  const requests: Record<string, string>[] = [];
  const fetch = async (_url: string, init: { headers: Record<string, string> }) => {
    requests.push(init.headers);
    const chunks = bodies.shift();
    if (!chunks) throw new Error('no more answers');
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const c of chunks) controller.enqueue(encoder.encode(c));
        controller.close();
      },
    });
    return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  };
  return { fetch: fetch as unknown as typeof globalThis.fetch, requests };
}

describe('dashboard followEventStream (with the client’s SSE parser)', () => {
  it('parses events split anywhere across chunks, including inside a CRLF, and hands over JSON data', async () => {
    const text = 'id: 7\r\nevent: metrics\r\ndata: {"points":[]}\r\n\r\n: ping\r\n\r\nevent: end\r\ndata: {"state":"succeeded"}\r\n\r\n';
    for (let cut = 1; cut < text.length; cut++) {
      const events: StreamEvent[] = [];
      const { fetch } = fakeFetch([[text.slice(0, cut), text.slice(cut)]]);
      const result = await followEventStream('/v1/jobs/x/events', { fetch, onEvent: (e) => events.push(e) });
      expect([cut, events, result]).toEqual([
        cut,
        [
          { id: '7', event: 'metrics', data: { points: [] } },
          { id: undefined, event: 'end', data: { state: 'succeeded' } },
        ],
        { ended: true, lastEventId: '7' },
      ]);
    }
  });

  it('reconnects after a drop with Last-Event-ID, dropping the unfinished event', async () => {
    const events: StreamEvent[] = [];
    const { fetch, requests } = fakeFetch([
      ['id: 1\nevent: log\ndata: {"text":"a"}\n\nid: 2\nevent: log\ndata: {"te'],
      ['id: 2\nevent: log\ndata: {"text":"b"}\n\nevent: end\ndata: {}\n\n'],
    ]);
    const result = await followEventStream('/v1/jobs/x/events', { fetch, retryMs: 1, onEvent: (e) => events.push(e) });
    expect(events.map((e) => e.data)).toEqual([{ text: 'a' }, { text: 'b' }, {}]);
    expect(requests.map((h) => h['last-event-id'])).toEqual([undefined, '1']);
    expect(result).toEqual({ ended: true, lastEventId: '2' });
  });
});
