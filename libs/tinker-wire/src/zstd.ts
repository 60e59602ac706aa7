/**
 * Node's zstd (added in 22.15, and not yet in the @types/node this repository builds with), typed here
 * once. `node:zlib` is looked up at the first zstd body, not imported, so the package also loads where
 * there is no Node (a browser bundle of `@opentinker/client`, which never compresses); there, or on a
 * Node without zstd, the first zstd body gets a clear error.
 */
interface ZstdZlib {
  zstdCompressSync?(data: Uint8Array): Buffer;
  zstdDecompressSync?(data: Uint8Array, options: { maxOutputLength?: number; params?: Record<number, number> }): Buffer;
  constants: { ZSTD_d_windowLogMax?: number };
}

let zlib: ZstdZlib | undefined;

function nodeZlib(): ZstdZlib {
  const process_ = (globalThis as { process?: { version?: string; getBuiltinModule?: (id: string) => unknown } }).process;
  zlib ??= process_?.getBuiltinModule?.('node:zlib') as ZstdZlib | undefined;
  if (!zlib) throw new Error('zstd bodies need Node (node:zlib); this runtime has none');
  return zlib;
}

function missing(): never {
  throw new Error(`this Node (${(globalThis as { process?: { version?: string } }).process?.version}) has no zstd in node:zlib; OpenTinker needs Node 22.15 or later`);
}

/** zstd compression at the library's default level (as the SDK's `zstandard.ZstdCompressor()`). */
export function zstdCompress(data: Uint8Array): Uint8Array {
  const z = nodeZlib();
  const out = z.zstdCompressSync ? z.zstdCompressSync(data) : missing();
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

/** zstd decompression with Node's output cap and a limit on the decoder's window (as a power of two). */
export function zstdDecompress(data: Uint8Array, maxOutputLength: number, windowLogMax: number): Buffer {
  const z = nodeZlib();
  if (!z.zstdDecompressSync || z.constants.ZSTD_d_windowLogMax === undefined) missing();
  return z.zstdDecompressSync(data, { maxOutputLength, params: { [z.constants.ZSTD_d_windowLogMax]: windowLogMax } });
}
