import { createZstdCompress, zstdCompressSync } from 'node:zlib';
import { decodeBody, decompressZstd } from './body';
import { isTinkerWireError } from './errors';
import { codeOf } from './testing';

/** A zstd frame written by Node's streaming compressor, which does not know the size up front. */
async function streamedFrame(data: Uint8Array): Promise<Uint8Array> {
  const z = createZstdCompress();
  const parts: Buffer[] = [];
  z.on('data', (b: Buffer) => parts.push(b));
  const done = new Promise((resolve) => z.on('end', resolve));
  z.write(data.subarray(0, 10));
  z.end(data.subarray(10));
  await done;
  return new Uint8Array(Buffer.concat(parts));
}

const sample = new Uint8Array(Array.from({ length: 100_000 }, (_, i) => (i * 7) % 251));

describe('request bodies: plain or zstd, within limits', () => {
  test('plain and identity bodies pass through; zstd ones decompress to the same bytes', () => {
    expect(decodeBody(sample)).toBe(sample);
    expect(decodeBody(sample, ' Identity ')).toBe(sample);
    expect(Buffer.from(decodeBody(new Uint8Array(zstdCompressSync(sample)), 'zstd')).equals(Buffer.from(sample))).toBe(true);
  });

  test('a streamed frame (no declared size) decompresses too', async () => {
    const frame = await streamedFrame(sample);
    expect(frame[4] >> 6).toBe(0); // no Frame_Content_Size
    expect(Buffer.from(decompressZstd(frame, 1 << 20)).equals(Buffer.from(sample))).toBe(true);
  });

  test('other encodings are refused by name', () => {
    expect(codeOf(() => decodeBody(sample, 'gzip'))).toBe('TINKER_WIRE_BAD_ENCODING');
    expect(codeOf(() => decodeBody(sample, 'zstd, gzip'))).toBe('TINKER_WIRE_BAD_ENCODING');
  });

  test('a body over the limit is refused before any work, plain or compressed', () => {
    expect(codeOf(() => decodeBody(sample, undefined, { maxBodyBytes: 1000 }))).toBe('TINKER_WIRE_TOO_LARGE');
    expect(codeOf(() => decodeBody(sample, undefined, { maxDecodedBytes: 1000 }))).toBe('TINKER_WIRE_TOO_LARGE');
  });

  test('a zstd bomb that declares its size is refused from the header; one that does not stops at the cap', async () => {
    const zeros = new Uint8Array(32 * 1024 * 1024);
    const bomb = new Uint8Array(zstdCompressSync(zeros));
    expect(bomb.byteLength).toBeLessThan(64 * 1024);
    const declared = (() => {
      try {
        decompressZstd(bomb, 1 << 20);
      } catch (e) {
        return e as Error;
      }
    })();
    expect(isTinkerWireError(declared) && declared.code).toBe('TINKER_WIRE_TOO_LARGE');
    expect(declared?.message).toMatch(/declares 33554432 bytes, over the limit of 1048576/);
    const streamed = await streamedFrame(zeros.subarray(0, 8 * 1024 * 1024));
    expect(codeOf(() => decompressZstd(streamed, 1 << 20))).toBe('TINKER_WIRE_TOO_LARGE');
  });

  test('a frame cut short anywhere is refused (Node alone returns what it decoded, without an error)', () => {
    const frame = new Uint8Array(zstdCompressSync(sample));
    for (const cut of [1, 3, 4, 10, frame.length - 6]) {
      expect([cut, codeOf(() => decompressZstd(frame.subarray(0, frame.length - cut), 1 << 20))]).toEqual([cut, 'TINKER_WIRE_BAD_ENCODING']);
    }
    expect(codeOf(() => decompressZstd(new Uint8Array(0), 1 << 20))).toBe('TINKER_WIRE_BAD_ENCODING');
  });

  test('garbage, a second frame cut short, and a frame needing a huge window are refused', () => {
    const frame = new Uint8Array(zstdCompressSync(sample));
    expect(codeOf(() => decompressZstd(new TextEncoder().encode('definitely not zstd'), 1 << 20))).toBe('TINKER_WIRE_BAD_ENCODING');
    expect(codeOf(() => decompressZstd(Buffer.concat([frame, frame.subarray(0, 20)]), 1 << 20))).toBe('TINKER_WIRE_BAD_ENCODING');
    expect(Buffer.from(decompressZstd(Buffer.concat([frame, frame]), 1 << 20)).length).toBe(2 * sample.length);
    // magic, descriptor (no size, not single-segment), window descriptor 2^31, one empty last raw block
    const hugeWindow = new Uint8Array([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xa8, 0x01, 0x00, 0x00]);
    expect(codeOf(() => decompressZstd(hugeWindow, 1 << 20))).toBe('TINKER_WIRE_TOO_LARGE');
  });

  test('a frame whose blocks decode to less than it declares is refused', () => {
    // declares 10 bytes (single segment, 1-byte size), holds one raw block of 3
    const lying = new Uint8Array([0x28, 0xb5, 0x2f, 0xfd, 0x20, 10, (3 << 3) | 1, 0, 0, 65, 66, 67]);
    expect(codeOf(() => decompressZstd(lying, 1 << 20))).toBe('TINKER_WIRE_BAD_ENCODING');
  });
});
