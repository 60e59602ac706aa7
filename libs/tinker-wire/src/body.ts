import { TinkerWireError } from './errors';
import { zstdDecompress } from './zstd';

/**
 * Request bodies as the SDK sends them: plain, or zstd-compressed (`Content-Encoding: zstd`, which the
 * SDK uses for forward_backward when the client config says `proto_compress_fwdbwd`).
 *
 * Decompression is bounded three ways, so a small body cannot make the server allocate or spin without
 * limit: a frame that declares its size (the SDK's always do) is refused before any work when the size
 * is over the cap, output stops at the cap for frames that do not, and the decoder's window is limited
 * ({@link ZSTD_WINDOW_LOG_MAX}). Node's zstd returns whatever it decoded from a frame cut short, without
 * an error; the frames are therefore walked block by block first, and a body that ends inside a frame,
 * or decodes to another size than it declared, is refused.
 */

/** Limits on one request body, in bytes. */
export interface BodyLimits {
  /** Largest body as received (compressed or not). Default {@link DEFAULT_BODY_LIMITS}. */
  maxBodyBytes?: number;
  /** Largest body after decompression. */
  maxDecodedBytes?: number;
}

/**
 * Defaults: 64 MiB either way. The SDK cuts forward_backward into requests of at most 1,024 datums or
 * an estimated 5 MB each (its client config's `fwdbwd_max_chunk_len` / `fwdbwd_max_chunk_bytes_count`).
 */
export const DEFAULT_BODY_LIMITS: Required<BodyLimits> = { maxBodyBytes: 64 * 1024 * 1024, maxDecodedBytes: 64 * 1024 * 1024 };

/**
 * Largest zstd window accepted, as a power of two (2^24 = 16 MiB of decoder memory). The SDK compresses
 * at zstd's default level, whose window is at most 2 MiB.
 */
export const ZSTD_WINDOW_LOG_MAX = 24;

const ZSTD_MAGIC = 0xfd2fb528;

/**
 * The body's bytes, decompressed when `contentEncoding` says zstd. `identity`, an empty value or none
 * mean plain; anything else is refused (`TINKER_WIRE_BAD_ENCODING`).
 *
 * @example
 * ```ts
 * const bytes = decodeBody(request.body, request.headers['content-encoding'], { maxDecodedBytes: 32 << 20 });
 * ```
 */
export function decodeBody(body: Uint8Array, contentEncoding?: string | null, limits: BodyLimits = {}): Uint8Array {
  const { maxBodyBytes, maxDecodedBytes } = { ...DEFAULT_BODY_LIMITS, ...limits };
  if (body.byteLength > maxBodyBytes) {
    throw new TinkerWireError('TINKER_WIRE_TOO_LARGE', `the body has ${body.byteLength} bytes, over the limit of ${maxBodyBytes}`, 'body');
  }
  const encoding = (contentEncoding ?? '').trim().toLowerCase();
  if (encoding === '' || encoding === 'identity') {
    if (body.byteLength > maxDecodedBytes) {
      throw new TinkerWireError('TINKER_WIRE_TOO_LARGE', `the body has ${body.byteLength} bytes, over the limit of ${maxDecodedBytes}`, 'body');
    }
    return body;
  }
  if (encoding !== 'zstd')
    throw new TinkerWireError('TINKER_WIRE_BAD_ENCODING', `Content-Encoding ${JSON.stringify(encoding)} is not supported (zstd or none)`, 'content-encoding');
  return decompressZstd(body, maxDecodedBytes);
}

/**
 * zstd frames decompressed, at most `maxBytes` of output. See the module comment for what is refused.
 *
 * @example
 * ```ts
 * const plain = decompressZstd(compressed, 1 << 20);
 * ```
 */
export function decompressZstd(data: Uint8Array, maxBytes: number): Uint8Array {
  const frames = walkFrames(data);
  const declared = frames.every((f) => f.size !== undefined) ? frames.reduce((n, f) => n + f.size!, 0) : undefined;
  if (declared !== undefined && declared > maxBytes) {
    throw new TinkerWireError('TINKER_WIRE_TOO_LARGE', `the zstd body declares ${declared} bytes, over the limit of ${maxBytes}`, 'body');
  }
  // Node's one-shot decoder stops after the first frame: decode them one by one.
  const parts: Uint8Array[] = [];
  let total = 0;
  for (const frame of frames) {
    const out = decompressFrame(data.subarray(frame.start, frame.end), maxBytes - total);
    if (frame.size !== undefined && out.byteLength !== frame.size) {
      throw new TinkerWireError('TINKER_WIRE_BAD_ENCODING', `a zstd frame decompressed to ${out.byteLength} bytes, not the ${frame.size} it declares`, 'body');
    }
    parts.push(out);
    total += out.byteLength;
  }
  if (parts.length === 1) return parts[0];
  const joined = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    joined.set(p, at);
    at += p.byteLength;
  }
  return joined;
}

function decompressFrame(frame: Uint8Array, maxBytes: number): Uint8Array {
  let out: Buffer;
  try {
    out = zstdDecompress(frame, Math.max(1, maxBytes), ZSTD_WINDOW_LOG_MAX);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ERR_BUFFER_TOO_LARGE') {
      throw new TinkerWireError('TINKER_WIRE_TOO_LARGE', `the zstd body decompresses to more than the limit of ${maxBytes} bytes`, 'body');
    }
    if (err.code === 'ZSTD_error_frameParameter_windowTooLarge') {
      throw new TinkerWireError('TINKER_WIRE_TOO_LARGE', `the zstd frame needs a window over 2^${ZSTD_WINDOW_LOG_MAX} bytes`, 'body');
    }
    throw new TinkerWireError('TINKER_WIRE_BAD_ENCODING', `the zstd body is damaged: ${err.message}`, 'body');
  }
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

/**
 * Walks the frames' headers and block headers (RFC 8878 §3.1.1) without decoding, and returns where
 * each frame lies and the content size it declares, if any. Refuses skippable and unknown frames,
 * reserved bits and block types, and a body that ends inside a frame.
 */
function walkFrames(data: Uint8Array): Array<{ start: number; end: number; size?: number }> {
  const bad = (why: string): never => {
    throw new TinkerWireError('TINKER_WIRE_BAD_ENCODING', `not a complete zstd body: ${why}`, 'body');
  };
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const frames: Array<{ start: number; end: number; size?: number }> = [];
  let pos = 0;
  if (data.byteLength === 0) bad('it is empty');
  while (pos < data.byteLength) {
    const start = pos;
    if (pos + 5 > data.byteLength) bad(`it ends inside a frame header at byte ${pos}`);
    if (view.getUint32(pos, true) !== ZSTD_MAGIC) bad(`no zstd frame starts at byte ${pos}`);
    const descriptor = data[pos + 4];
    pos += 5;
    const sizeFlag = descriptor >> 6;
    const singleSegment = (descriptor >> 5) & 1;
    const checksum = (descriptor >> 2) & 1;
    if ((descriptor >> 3) & 1) bad('a reserved bit is set');
    const dictionaryBytes = [0, 1, 2, 4][descriptor & 3];
    const sizeBytes = sizeFlag === 0 ? singleSegment : [0, 2, 4, 8][sizeFlag];
    const headerRest = (singleSegment ? 0 : 1) + dictionaryBytes + sizeBytes;
    if (pos + headerRest > data.byteLength) bad('it ends inside a frame header');
    pos += (singleSegment ? 0 : 1) + dictionaryBytes;
    let size: number | undefined;
    if (sizeBytes === 1) size = data[pos];
    else if (sizeBytes === 2) size = view.getUint16(pos, true) + 256;
    else if (sizeBytes === 4) size = view.getUint32(pos, true);
    else if (sizeBytes === 8) size = Number(view.getBigUint64(pos, true));
    pos += sizeBytes;
    for (;;) {
      if (pos + 3 > data.byteLength) bad('it ends inside a block header');
      const header = data[pos] | (data[pos + 1] << 8) | (data[pos + 2] << 16);
      pos += 3;
      const last = header & 1;
      const type = (header >> 1) & 3;
      const blockSize = header >>> 3;
      if (type === 3) bad('a block has the reserved type');
      pos += type === 1 ? 1 : blockSize;
      if (pos > data.byteLength) bad('it ends inside a block');
      if (last) break;
    }
    pos += checksum ? 4 : 0;
    if (pos > data.byteLength) bad('it ends inside a frame checksum');
    frames.push(size === undefined ? { start, end: pos } : { start, end: pos, size });
  }
  return frames;
}
