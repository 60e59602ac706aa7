import { SseMessage, SseParser } from './sse-parser';

function parseAll(chunks: string[], parser = new SseParser()): SseMessage[] {
  return chunks.flatMap((c) => parser.push(c));
}

const STREAM = 'id: 1\nevent: state\ndata: {"state":"queued"}\n\n: ping\n\nid: 2\nevent: log\ndata: line one\ndata: line two\n\nevent: end\ndata: {"state":"succeeded"}\n\n';
const EXPECTED: SseMessage[] = [
  { id: '1', lastEventId: '1', event: 'state', data: '{"state":"queued"}' },
  { id: '2', lastEventId: '2', event: 'log', data: 'line one\nline two' },
  { lastEventId: '2', event: 'end', data: '{"state":"succeeded"}' },
];

describe('SseParser', () => {
  it('parses events, skips comments, joins data lines and keeps the last id across events', () => {
    expect(parseAll([STREAM])).toEqual(EXPECTED);
  });

  it('gives the same events whatever the chunking, down to one character at a time', () => {
    for (const size of [1, 2, 3, 7, 13]) {
      const chunks: string[] = [];
      for (let i = 0; i < STREAM.length; i += size) chunks.push(STREAM.slice(i, i + size));
      expect(parseAll(chunks)).toEqual(EXPECTED);
    }
  });

  it('accepts CRLF and CR line ends, also a CRLF split between chunks', () => {
    const crlf = STREAM.replace(/\n/g, '\r\n');
    expect(parseAll([crlf])).toEqual(EXPECTED);
    expect(parseAll([STREAM.replace(/\n/g, '\r')])).toEqual(EXPECTED);
    const cut = crlf.indexOf('\r\n') + 1;
    expect(parseAll([crlf.slice(0, cut), crlf.slice(cut)])).toEqual(EXPECTED);
  });

  it('dispatches nothing until the blank line, and drops an unfinished event', () => {
    const parser = new SseParser();
    expect(parser.push('id: 5\nevent: progress\ndata: {"step":1}\n')).toEqual([]);
    expect(parser.push('\n')).toEqual([{ id: '5', lastEventId: '5', event: 'progress', data: '{"step":1}' }]);
    expect(parser.push('id: 6\ndata: half')).toEqual([]);
    expect(parser.lastId).toBe('5');
  });

  it('follows the field rules: one optional space, no colon, unknown fields, empty data, BOM', () => {
    const messages = parseAll(['\uFEFFdata:x\n\ndata:  two spaces\n\ndata\n\nfoo: bar\ndata: y\n\nevent: nodata\n\n']);
    expect(messages.map((m) => m.data)).toEqual(['x', ' two spaces', '', 'y']);
    expect(messages.map((m) => m.event)).toEqual(['message', 'message', 'message', 'message']);
  });

  it('ignores an id containing NUL and reads retry only when it is all digits', () => {
    const parser = new SseParser('9');
    expect(parser.push('id: a\0b\ndata: 1\n\nretry: soon\n\n')).toEqual([{ lastEventId: '9', event: 'message', data: '1' }]);
    expect(parser.reconnectionTime).toBeUndefined();
    parser.push('retry: 1500\n\n');
    expect(parser.reconnectionTime).toBe(1500);
  });

  it('lets an empty id reset the last event id', () => {
    expect(parseAll(['id: 3\ndata: a\n\nid\ndata: b\n\n']).map((m) => m.lastEventId)).toEqual(['3', '']);
  });

  it('completes an event split at any point, including between the CR and LF of a CRLF', () => {
    const text = 'id: 7\r\nevent: metrics\r\ndata: {"points":[]}\r\n\r\nevent: end\r\ndata: {}\r\n\r\n';
    for (let cut = 1; cut < text.length; cut++) {
      expect([cut, parseAll([text.slice(0, cut), text.slice(cut)])]).toEqual([
        cut,
        [
          { id: '7', lastEventId: '7', event: 'metrics', data: '{"points":[]}' },
          { lastEventId: '7', event: 'end', data: '{}' },
        ],
      ]);
    }
  });
});
