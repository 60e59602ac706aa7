import { isTinkerWireError } from '@opentinker/tinker-wire';
import type { QueueStateChange } from './tinker-futures';
import { badResponse, type TinkerHttp } from './tinker-http';
import type { SamplingClient } from './tinker-sampling-client';

/** How a forward/backward batch is cut into requests (the client config's `fwdbwd_max_chunk_*`, with the SDK's defaults). */
export interface ChunkLimits {
  maxDatums: number;
  maxBytes: number;
}

/** What the training and sampling clients of one service client share: the HTTP side and the session. */
export interface TinkerContext {
  readonly http: TinkerHttp;
  readonly onQueueState?: (change: QueueStateChange) => void;
  /** The session's id, created (with its heartbeats) on first use. */
  sessionId(): Promise<string>;
  /** The next `sampling_session_seq_id` of the session (its samplers count from 0); only once the session exists. */
  nextSamplingSessionSeqId(): number;
  /** Read from the client config when the session was created (the SDK's defaults until then). */
  chunkLimits(): ChunkLimits;
  /** A sampler of a saved sampler checkpoint or a base model (`create_sampling_session`). */
  createSamplingClient(from: { modelPath: string } | { baseModel: string }, options?: { signal?: AbortSignal }): Promise<SamplingClient>;
}

/** A zod schema of `@opentinker/tinker-wire`, as far as reading an answer needs it. */
export interface AnswerSchema<T> {
  safeParse(value: unknown): { success: true; data: T } | { success: false; error: { message: string } };
}

/** An answer read with the wire's schema of it, or `OT_ERR_BAD_RESPONSE` saying what did not fit. */
export function parseAnswer<T>(schema: AnswerSchema<T>, value: unknown, what: string, url = ''): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw badResponse({ url }, `${what} does not fit its schema: ${parsed.error.message}`);
  return parsed.data;
}

/** A protobuf result read with the wire's decoder; bytes it cannot read are `OT_ERR_BAD_RESPONSE` naming the field. */
export function readWire<T>(decode: () => T, url: string): T {
  try {
    return decode();
  } catch (error) {
    if (!isTinkerWireError(error)) throw error;
    throw badResponse({ url }, `the protobuf result does not read (${error.code}${error.field ? ` at ${error.field}` : ''}): ${error.message}`, error);
  }
}
