/** One dispatched Server-Sent Event. */
export interface SseMessage {
  /** The `event:` field, `message` when there was none. */
  event: string;
  /** The `data:` lines joined with `\n`. */
  data: string;
  /** The `id:` field of this very event, when it had one. */
  id?: string;
  /** The stream's last event id after this event (ids persist across events, as in EventSource). */
  lastEventId: string;
}

/**
 * An incremental parser of the `text/event-stream` format, as the HTML standard defines it, for
 * clients that cannot use `EventSource` (which sends no Authorization header): feed it decoded text in
 * chunks of any size and it returns the events completed so far. Lines end with LF, CRLF or CR (also
 * split across chunks); comment lines (`: ping`) are skipped; an event without data is not
 * dispatched; an unfinished event at the end of the stream is dropped, as the standard says.
 *
 * @example
 * ```ts
 * const parser = new SseParser();
 * parser.push('id: 7\nevent: progress\ndata: {"step":1}\n'); // []
 * parser.push('\n'); // [{ event: 'progress', data: '{"step":1}', id: '7', lastEventId: '7' }]
 * ```
 */
export class SseParser {
  private buffer = '';
  private started = false;
  /** A CR ended the previous chunk: a LF starting the next one belongs to the same line break. */
  private pendingCr = false;
  private data: string[] = [];
  private event = '';
  private eventId: string | undefined;
  /** The standard's "last event ID buffer": set by an `id:` line, becomes {@link lastId} on dispatch. */
  private idBuffer = '';
  private lastEventId = '';
  /** The reconnection delay the server last asked for with a `retry:` field, in ms. */
  reconnectionTime: number | undefined;

  constructor(initialLastEventId = '') {
    this.lastEventId = initialLastEventId;
    this.idBuffer = initialLastEventId;
  }

  push(chunk: string): SseMessage[] {
    if (!this.started && chunk.length > 0) {
      this.started = true;
      if (chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1);
    }
    if (this.pendingCr && chunk.startsWith('\n')) chunk = chunk.slice(1);
    this.pendingCr = false;
    this.buffer += chunk;
    const out: SseMessage[] = [];
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const c = this.buffer.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const line = this.buffer.slice(start, i);
      if (c === 13) {
        if (i + 1 === this.buffer.length) this.pendingCr = true;
        else if (this.buffer.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
      const message = this.line(line);
      if (message) out.push(message);
    }
    this.buffer = this.buffer.slice(start);
    return out;
  }

  /** The last event id of the dispatched events (what to send as `Last-Event-ID` when reconnecting). */
  get lastId(): string {
    return this.lastEventId;
  }

  private line(line: string): SseMessage | undefined {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.event = value;
        break;
      case 'data':
        this.data.push(value);
        break;
      case 'id':
        // An id with NUL is ignored (the standard's rule; it could not be sent back in a header).
        if (!value.includes('\0')) {
          this.idBuffer = value;
          this.eventId = value;
        }
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.reconnectionTime = Number(value);
        break;
      default:
        break;
    }
    return undefined;
  }

  private dispatch(): SseMessage | undefined {
    const { data, event, eventId } = this;
    this.data = [];
    this.event = '';
    this.eventId = undefined;
    this.lastEventId = this.idBuffer;
    if (data.length === 0) return undefined;
    const message: SseMessage = { event: event || 'message', data: data.join('\n'), lastEventId: this.lastEventId };
    if (eventId !== undefined) message.id = eventId;
    return message;
  }
}
