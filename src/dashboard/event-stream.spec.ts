import { SseParser } from './public/event-stream.mjs';

describe('dashboard SSE parser', () => {
  it('parses the frames the job stream writes', () => {
    const parser = new SseParser();
    const events = parser.push('id: 1\nevent: state\ndata: {"state":"queued"}\n\nid: 2\nevent: log\ndata: {"text":"a"}\n\n');
    expect(events).toEqual([
      { id: '1', event: 'state', data: '{"state":"queued"}' },
      { id: '2', event: 'log', data: '{"text":"a"}' },
    ]);
  });

  it('completes an event split anywhere across chunks, including inside a CRLF', () => {
    const text = 'id: 7\r\nevent: metrics\r\ndata: {"points":[]}\r\n\r\nevent: end\r\ndata: {"state":"succeeded"}\r\n\r\n';
    for (let cut = 1; cut < text.length; cut++) {
      const parser = new SseParser();
      const events = [...parser.push(text.slice(0, cut)), ...parser.push(text.slice(cut))];
      expect([cut, events]).toEqual([
        cut,
        [
          { id: '7', event: 'metrics', data: '{"points":[]}' },
          { id: undefined, event: 'end', data: '{"state":"succeeded"}' },
        ],
      ]);
    }
  });

  it('skips comments (keep-alive pings), joins multi-line data, defaults the event type to message', () => {
    const parser = new SseParser();
    expect(parser.push(': ping\n\ndata: one\ndata: two\n\ndata:no-space\n\n')).toEqual([
      { id: undefined, event: 'message', data: 'one\ntwo' },
      { id: undefined, event: 'message', data: 'no-space' },
    ]);
  });

  it('returns nothing until the blank line that ends an event', () => {
    const parser = new SseParser();
    expect(parser.push('id: 3\nevent: log\ndata: {}\n')).toEqual([]);
    expect(parser.push('\n')).toEqual([{ id: '3', event: 'log', data: '{}' }]);
  });
});
