import type { FastifyReply } from 'fastify';

/** A Server-Sent Events response taken over from Fastify: raw frames, and whether the client has left. */
export interface EventStreamReply {
  /** Writes a frame unless the client has gone; returns whether it was written. */
  write(frame: string): boolean;
  closed(): boolean;
  end(): void;
}

/**
 * Takes over `reply` and opens an event stream with the headers proxies need to pass it through
 * unbuffered (nginx honours `x-accel-buffering`).
 */
export function openEventStream(reply: FastifyReply): EventStreamReply {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  let closed = false;
  raw.on('close', () => (closed = true));
  return {
    write: (frame) => {
      if (closed) return false;
      raw.write(frame);
      return true;
    },
    closed: () => closed,
    end: () => raw.end(),
  };
}
