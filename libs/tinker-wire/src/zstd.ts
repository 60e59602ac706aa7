import * as zlib from 'node:zlib';

/**
 * Node's zstd (added in 22.15, and not yet in the @types/node this repository builds with), typed here
 * once. A Node without it gets a clear error at the first zstd body rather than at import.
 */
interface ZstdZlib {
  zstdCompressSync?(data: Uint8Array): Buffer;
  zstdDecompressSync?(data: Uint8Array, options: { maxOutputLength?: number; params?: Record<number, number> }): Buffer;
  constants: { ZSTD_d_windowLogMax?: number };
}

const z = zlib as unknown as ZstdZlib;

function missing(): never {
  throw new Error(`this Node (${process.version}) has no zstd in node:zlib; OpenTinker needs Node 22.15 or later`);
}

/** zstd compression at the library's default level (as the SDK's `zstandard.ZstdCompressor()`). */
export function zstdCompress(data: Uint8Array): Uint8Array {
  const out = z.zstdCompressSync ? z.zstdCompressSync(data) : missing();
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

/** zstd decompression with Node's output cap and a limit on the decoder's window (as a power of two). */
export function zstdDecompress(data: Uint8Array, maxOutputLength: number, windowLogMax: number): Buffer {
  if (!z.zstdDecompressSync || z.constants.ZSTD_d_windowLogMax === undefined) missing();
  return z.zstdDecompressSync(data, { maxOutputLength, params: { [z.constants.ZSTD_d_windowLogMax]: windowLogMax } });
}
