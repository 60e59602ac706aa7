import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isEngineError } from '../errors';
import { Prng } from '../util/prng';
import { SafetensorsFile, decodeSafetensors, encodeSafetensors } from './safetensors';

/** A file from a raw header string and a data section of `dataBytes` bytes. */
function fileOf(header: string, dataBytes: number, declaredLength?: number): Uint8Array {
  const json = new TextEncoder().encode(header);
  const out = new Uint8Array(8 + json.length + dataBytes);
  new DataView(out.buffer).setBigUint64(0, BigInt(declaredLength ?? json.length), true);
  out.set(json, 8);
  return out;
}

const t = (dtype: string, shape: unknown, offsets: unknown) => JSON.stringify({ dtype, shape, data_offsets: offsets });

function errorOf(bytes: Uint8Array, maxHeader?: number): { code: string; message: string } {
  try {
    decodeSafetensors(bytes, maxHeader);
  } catch (e) {
    expect(isEngineError(e)).toBe(true);
    return e as { code: string; message: string };
  }
  throw new Error('expected decodeSafetensors to throw');
}

describe('safetensors corruption', () => {
  const cases: Array<[string, Uint8Array, RegExp]> = [
    ['an empty file', new Uint8Array(0), /shorter than the 8-byte header length/],
    ['a 5-byte file', new Uint8Array(5), /shorter than the 8-byte header length/],
    ['a header length past the end', fileOf('{}', 0, 100), /runs past the end/],
    [
      'a header length of 2^63',
      (() => {
        const b = new Uint8Array(16);
        new DataView(b.buffer).setBigUint64(0, 2n ** 63n, true);
        return b;
      })(),
      /exceeds the 100000000-byte limit/,
    ],
    ['a zero header length', fileOf('', 0), /too small/],
    ['a header that is not JSON', fileOf('{"a":', 0), /not valid JSON/],
    ['a header that is a JSON array', fileOf('[1,2]', 0), /does not start with "\{"/],
    [
      'a header that is not UTF-8',
      (() => {
        const b = fileOf('{"a":1}', 0);
        b[10] = 0xff;
        return b;
      })(),
      /not valid UTF-8/,
    ],
    ['a tensor that is not an object', fileOf('{"a":1}', 0), /tensor "a" is not an object/],
    ['an unknown dtype', fileOf(`{"a":${t('F128', [1], [0, 16])}}`, 16), /unknown dtype "F128"/],
    ['a negative dimension', fileOf(`{"a":${t('F32', [-1], [0, 4])}}`, 4), /shape must be a list of non-negative integers/],
    ['a fractional dimension', fileOf(`{"a":${t('F32', [1.5], [0, 4])}}`, 4), /shape must be a list/],
    ['a shape that is not a list', fileOf(`{"a":${t('F32', 3, [0, 12])}}`, 12), /shape must be a list/],
    ['a huge shape', fileOf(`{"a":${t('F32', [2 ** 30, 2 ** 30, 2 ** 30], [0, 4])}}`, 4), /too large/],
    ['offsets that are not a pair', fileOf(`{"a":${t('F32', [1], [0])}}`, 4), /must be \[begin, end\]/],
    ['a negative offset', fileOf(`{"a":${t('F32', [1], [-4, 0])}}`, 4), /non-negative integers/],
    ['a string offset', fileOf(`{"a":${t('F32', [1], ['0', 4])}}`, 4), /non-negative integers/],
    ['end before begin', fileOf(`{"a":${t('F32', [0], [4, 0])}}`, 4), /end 0 is before begin 4/],
    ['a size that does not match the shape', fileOf(`{"a":${t('F32', [2], [0, 4])}}`, 8), /needs 8 bytes but data_offsets span 4/],
    ['data past the end of the file', fileOf(`{"a":${t('F32', [2], [0, 8])}}`, 4), /past the 4-byte data section/],
    ['a gap before the first tensor', fileOf(`{"a":${t('F32', [1], [4, 8])}}`, 8), /gap in the data section before tensor "a"/],
    ['overlapping tensors', fileOf(`{"a":${t('F32', [2], [0, 8])},"b":${t('F32', [1], [4, 8])}}`, 8), /overlaps/],
    ['trailing bytes after the last tensor', fileOf(`{"a":${t('F32', [1], [0, 4])}}`, 12), /data section is 12 bytes but the tensors cover 4/],
    ['an unknown tensor field', fileOf(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}`, 4), /unknown field "x"/],
    ['metadata with a number', fileOf('{"__metadata__":{"format":1}}', 0), /__metadata__.format must be a string/],
    ['metadata that is a list', fileOf('{"__metadata__":["pt"]}', 0), /__metadata__ must be an object/],
  ];

  it.each(cases)('refuses %s with ENGINE_IO and a clear message', (_, bytes, message) => {
    const e = errorOf(bytes);
    expect(e.code).toBe('ENGINE_IO');
    expect(e.message).toMatch(/^invalid safetensors: /);
    expect(e.message).toMatch(message);
  });

  it('applies a configurable header cap before allocating the header', () => {
    const bytes = fileOf(`{"a":${t('F32', [1], [0, 4])}}`, 4);
    expect(() => decodeSafetensors(bytes)).not.toThrow();
    expect(errorOf(bytes, 16).message).toMatch(/exceeds the 16-byte limit/);
  });

  it('names the file when a corrupt file is opened from disk', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'safetensors-corrupt-'));
    try {
      const path = join(tmp, 'bad.safetensors');
      writeFileSync(path, fileOf(`{"a":${t('F32', [2], [0, 4])}}`, 4));
      await expect(SafetensorsFile.open(path)).rejects.toMatchObject({ code: 'ENGINE_IO', message: expect.stringContaining(`${path}: invalid safetensors`) });
      writeFileSync(path, new Uint8Array(3));
      await expect(SafetensorsFile.open(path)).rejects.toMatchObject({ code: 'ENGINE_IO' });
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('never fails with anything but ENGINE_IO on randomly damaged files (fuzz, seeded)', () => {
    const valid = encodeSafetensors(
      [
        ['a', { shape: [2, 3], data: new Float32Array([1, 2, 3, 4, 5, 6]), dtype: 'BF16' }],
        ['b', { shape: [3], data: new BigInt64Array([1n, 2n, 3n]) }],
        ['c', { shape: [0], data: new Float32Array(0) }],
        ['d', { shape: [], data: new Float32Array([7]), dtype: 'F16' }],
      ],
      { format: 'pt' },
    );
    const rng = new Prng(7);
    const pick = (n: number) => Math.floor(rng.uniform() * n);
    let refused = 0;
    let accepted = 0;
    for (let round = 0; round < 3000; round++) {
      let bytes = valid.slice();
      const kind = round % 4;
      if (kind === 0) {
        // Flip a few random bytes anywhere.
        for (let k = 0, m = 1 + pick(4); k < m; k++) bytes[pick(bytes.length)] = pick(256);
      } else if (kind === 1) {
        bytes = bytes.slice(0, pick(bytes.length));
      } else if (kind === 2) {
        // Damage the header's digits and punctuation, where the checks live.
        const at = 8 + pick(bytes.length - 8 - 28);
        bytes[at] = '0123456789[]{},:"-.e '.charCodeAt(pick(21));
      } else {
        const extra = new Uint8Array(1 + pick(16)).map(() => pick(256));
        const at = pick(bytes.length);
        bytes = new Uint8Array([...bytes.subarray(0, at), ...extra, ...bytes.subarray(at)]);
      }
      try {
        const { tensors } = decodeSafetensors(bytes);
        // Whatever is accepted must be self-consistent: every tensor decodes to its shape's size.
        for (const tensor of tensors.values()) expect(tensor.data.length).toBe(tensor.shape.reduce((a, b) => a * b, 1));
        accepted++;
      } catch (e) {
        if (!isEngineError(e) || e.code !== 'ENGINE_IO') throw e;
        refused++;
      }
    }
    expect(refused).toBeGreaterThan(1000);
    expect(accepted).toBeGreaterThan(0); // flips inside tensor data are legitimately still valid files
  });
});
