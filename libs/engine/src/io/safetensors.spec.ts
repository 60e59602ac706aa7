import { mkdtempSync, readFileSync, rmSync, statSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SafetensorsFile, decodeSafetensors, encodeSafetensors, readSafetensors, writeSafetensors, type SafetensorsWriteTensor } from './safetensors';

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', '__golden__', 'safetensors');
const expected = JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8')) as {
  files: Record<
    string,
    { metadata: Record<string, string> | null; tensors: Record<string, { dtype: string; shape: number[]; f32_bits?: Array<number | 'nan'>; values?: unknown[] }> }
  >;
};

function bitsOf(data: Float32Array): number[] {
  return [...new Uint32Array(data.buffer, data.byteOffset, data.length)];
}

describe('safetensors', () => {
  let tmp: string;
  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), 'safetensors-spec-'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it.each(['floats-f32.safetensors', 'floats-f16.safetensors', 'floats-bf16.safetensors'])('reads the Python-written %s bit-exactly', async (name) => {
    const want = expected.files[name];
    const { tensors, dtypes, metadata } = await readSafetensors(join(dir, name));
    expect(metadata).toEqual(want.metadata);
    expect([...tensors.keys()].sort()).toEqual(Object.keys(want.tensors).sort());
    for (const [tensorName, t] of Object.entries(want.tensors)) {
      const got = tensors.get(tensorName)!;
      expect(got.shape).toEqual(t.shape);
      expect(dtypes.get(tensorName)).toBe(t.dtype);
      const bits = bitsOf(got.data);
      t.f32_bits!.forEach((b, i) => {
        if (b === 'nan') expect(Number.isNaN(got.data[i])).toBe(true);
        else expect([tensorName, i, bits[i]]).toEqual([tensorName, i, b]);
      });
    }
  });

  it('writes byte-for-byte what the independent Python writer wrote, for F32, F16 and BF16', async () => {
    const source = decodeSafetensors(readFileSync(join(dir, 'floats-f32.safetensors')));
    for (const dtype of ['F32', 'F16', 'BF16'] as const) {
      // The Python writer orders tensors like the Rust one (dtype, then name); pass them in that order.
      const ordered = [...source.tensors.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
      const ours = encodeSafetensors(
        ordered.map(([n, t]): [string, SafetensorsWriteTensor] => [n, { shape: t.shape, data: t.data, dtype }]),
        { format: 'pt', source: 'make_safetensors.py' },
      );
      const theirs = readFileSync(join(dir, `floats-${dtype.toLowerCase()}.safetensors`));
      expect(Buffer.from(ours).equals(theirs)).toBe(true);
    }
  });

  it('reads integer, double, boolean, empty and scalar tensors', async () => {
    const file = await SafetensorsFile.open(join(dir, 'mixed.safetensors'));
    try {
      const want = expected.files['mixed.safetensors'].tensors;
      expect(file.header.metadata).toBeNull();
      expect(file.names.sort()).toEqual(Object.keys(want).sort());
      const ids = await file.readTensor('ids');
      expect(ids.data).toBeInstanceOf(BigInt64Array);
      expect([...(ids.data as BigInt64Array)].map(String)).toEqual(want.ids.values);
      const grid = await file.readTensor('grid');
      expect(grid.data).toBeInstanceOf(Int32Array);
      expect(grid.shape).toEqual([2, 3]);
      expect([...grid.data]).toEqual(want.grid.values);
      expect([...(await file.readTensor('bytes')).data]).toEqual(want.bytes.values);
      expect((await file.readTensor('mask')).dtype).toBe('BOOL');
      expect([...(await file.readTensor('mask')).data]).toEqual(want.mask.values);
      expect([...(await file.readTensor('doubles')).data]).toEqual(want.doubles.values);
      expect(await file.readFloat32('empty')).toEqual({ shape: [0, 3], data: new Float32Array(0) });
      expect(await file.readFloat32('scalar')).toEqual({ shape: [], data: new Float32Array([1.5]) });
      // Integers convert to float32 on request (the engine's weight format).
      expect([...(await file.readFloat32('grid')).data]).toEqual([-(2 ** 31), -7, 0, 7, 65536, 2 ** 31]);
      await expect(file.readTensor('nope')).rejects.toMatchObject({ code: 'ENGINE_IO', field: 'nope' });
    } finally {
      await file.close();
    }
  });

  it('round-trips through a file, streaming, with every dtype it writes', async () => {
    const n = (1 << 20) + 17; // more than one conversion chunk
    const big = new Float32Array(n);
    for (let i = 0; i < n; i++) big[i] = Math.sin(i) * 100;
    const tensors = new Map<string, SafetensorsWriteTensor>([
      ['big', { shape: [n], data: big }],
      ['small.f16', { shape: [2, 2], data: new Float32Array([1, -2, 0.5, 65504]), dtype: 'F16' }],
      ['ids', { shape: [3], data: new BigInt64Array([1n, -2n, 2n ** 62n]) }],
      ['i32', { shape: [1], data: new Int32Array([-5]) }],
      ['d', { shape: [2], data: new Float64Array([0.1, 1e300]) }],
      ['mask', { shape: [2], data: new Uint8Array([1, 0]), dtype: 'BOOL' }],
    ]);
    const path = join(tmp, 'rt.safetensors');
    const size = await writeSafetensors(path, tensors, { dtype: 'BF16', metadata: { format: 'pt' } });
    expect(statSync(path).size).toBe(size);
    expect(existsSync(`${path}.tmp`)).toBe(false);
    const file = await SafetensorsFile.open(path);
    try {
      // The default dtype applies to float32 tensors without their own.
      expect(file.info('big')!.dtype).toBe('BF16');
      expect(file.info('small.f16')!.dtype).toBe('F16');
      expect(file.info('ids')!.dtype).toBe('I64');
      expect(file.info('mask')!.dtype).toBe('BOOL');
      expect(file.header.metadata).toEqual({ format: 'pt' });
      expect(file.header.dataStart % 8).toBe(0);
      const bigBack = (await file.readTensor('big')).data as Float32Array;
      let worst = 0;
      for (let i = 0; i < n; i++) worst = Math.max(worst, Math.abs(bigBack[i] - big[i]) / Math.max(Math.abs(big[i]), 1e-30));
      expect(worst).toBeLessThanOrEqual(2 ** -8); // bf16 keeps 8 significant bits: half an ulp is at most 2^-8 relative
      expect([...(await file.readTensor('small.f16')).data]).toEqual([1, -2, 0.5, 65504]);
      expect([...((await file.readTensor('ids')).data as BigInt64Array)]).toEqual([1n, -2n, 2n ** 62n]);
      expect([...(await file.readTensor('i32')).data]).toEqual([-5]);
      expect([...(await file.readTensor('d')).data]).toEqual([0.1, 1e300]);
    } finally {
      await file.close();
    }
    // F32 is lossless.
    const f32Path = join(tmp, 'rt32.safetensors');
    await writeSafetensors(f32Path, [['big', { shape: [n], data: big }]]);
    const back = (await readSafetensors(f32Path)).tensors.get('big')!.data;
    // A Buffer compare: jest's deep equality on a million numbers takes seconds.
    expect(Buffer.from(back.buffer, back.byteOffset, back.byteLength).equals(Buffer.from(big.buffer))).toBe(true);
  });

  it('refuses tensors it cannot write, naming them', () => {
    const bad =
      (t: SafetensorsWriteTensor, name = 'w') =>
      () =>
        encodeSafetensors([[name, t]]);
    expect(bad({ shape: [3], data: new Float32Array(2) })).toThrow(expect.objectContaining({ code: 'ENGINE_IO', field: 'w' }));
    expect(bad({ shape: [-1], data: new Float32Array(0) })).toThrow(/non-negative integers/);
    expect(bad({ shape: [2], data: new Int32Array(2), dtype: 'F16' })).toThrow(/cannot write I32 data as F16/);
    expect(bad({ shape: [1], data: new Float32Array(1) }, '__metadata__')).toThrow(/invalid tensor name/);
    expect(() =>
      encodeSafetensors([
        ['a', { shape: [1], data: new Float32Array(1) }],
        ['a', { shape: [1], data: new Float32Array(1) }],
      ]),
    ).toThrow(/duplicate tensor name "a"/);
  });

  it('returns tensors that do not alias the buffer they were decoded from', () => {
    const bytes = encodeSafetensors([
      ['a', { shape: [2], data: new Float32Array([1, 2]) }],
      ['b', { shape: [1], data: new Int32Array([7]) }],
    ]);
    const { tensors } = decodeSafetensors(bytes);
    bytes.fill(0, 8);
    expect([...tensors.get('a')!.data]).toEqual([1, 2]);
    expect([...tensors.get('b')!.data]).toEqual([7]);
  });

  it('reads a file without metadata and with an unpadded header', () => {
    const header = new TextEncoder().encode('{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}');
    const bytes = new Uint8Array(8 + header.length + 4);
    new DataView(bytes.buffer).setBigUint64(0, BigInt(header.length), true);
    bytes.set(header, 8);
    new DataView(bytes.buffer).setFloat32(8 + header.length, 2.5, true);
    const { tensors, metadata } = decodeSafetensors(bytes);
    expect(metadata).toBeNull();
    expect([...tensors.get('x')!.data]).toEqual([2.5]);
  });

  it('reports a missing file as ENGINE_IO with the path', async () => {
    await expect(SafetensorsFile.open(join(tmp, 'missing.safetensors'))).rejects.toMatchObject({ code: 'ENGINE_IO', field: join(tmp, 'missing.safetensors') });
  });
});
