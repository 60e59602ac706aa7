import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import { endianness } from 'node:os';
import { EngineError } from '../errors';
import { decodeBfloat16, decodeFloat16, encodeBfloat16, encodeFloat16 } from './half-precision';

/**
 * The safetensors format (https://github.com/huggingface/safetensors): 8 bytes little-endian header
 * length N, N bytes of UTF-8 JSON (`{"name": {"dtype", "shape", "data_offsets": [begin, end]}, …,
 * "__metadata__": {string: string}}`, padded with spaces), then the tensors' raw little-endian bytes,
 * row-major, with offsets relative to the end of the header. Files are read header first, then one
 * tensor at a time by offset, so a multi-gigabyte shard never has to sit in memory (or in a JS string)
 * at once.
 */

/** Every dtype name the format defines (a header naming another one is corrupt). */
export type SafetensorsDtype = 'BOOL' | 'U8' | 'I8' | 'F8_E5M2' | 'F8_E4M3' | 'I16' | 'U16' | 'F16' | 'BF16' | 'I32' | 'U32' | 'F32' | 'F64' | 'I64' | 'U64';

/** The dtypes written from float32 weights. */
export type SafetensorsFloatDtype = 'F32' | 'F16' | 'BF16';

const DTYPE_BYTES: Readonly<Record<SafetensorsDtype, number>> = {
  BOOL: 1,
  U8: 1,
  I8: 1,
  F8_E5M2: 1,
  F8_E4M3: 1,
  I16: 2,
  U16: 2,
  F16: 2,
  BF16: 2,
  I32: 4,
  U32: 4,
  F32: 4,
  F64: 8,
  I64: 8,
  U64: 8,
};

/** Bytes per element of a dtype. */
export function dtypeBytes(dtype: SafetensorsDtype): number {
  return DTYPE_BYTES[dtype];
}

/**
 * The reference implementation refuses headers over 100 MB; a larger length prefix is almost surely a
 * corrupt or hostile file, and reading it would allocate that much before failing.
 */
export const MAX_SAFETENSORS_HEADER_BYTES = 100_000_000;

/** Where one tensor lies in a file. */
export interface SafetensorsTensorInfo {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  /** Byte range relative to the start of the data section, end exclusive. */
  dataOffsets: [number, number];
}

/** A parsed and checked header. */
export interface SafetensorsHeader {
  /** Tensors in file order (by data offset). */
  tensors: SafetensorsTensorInfo[];
  /** `__metadata__`, or null when the file has none. */
  metadata: Record<string, string> | null;
  /** Absolute file offset of the data section (8 + header length). */
  dataStart: number;
  /** Size of the data section in bytes. */
  dataBytes: number;
}

/** Typed data of a decoded tensor: float dtypes widen to float32 (F64 stays float64); integers keep their type. */
export type SafetensorsData = Float32Array | Float64Array | BigInt64Array | BigUint64Array | Int32Array | Uint32Array | Int16Array | Uint16Array | Int8Array | Uint8Array;

/** A decoded tensor with the dtype it had in the file. */
export interface SafetensorsTensor {
  dtype: SafetensorsDtype;
  shape: number[];
  data: SafetensorsData;
}

/** A tensor to write: float32 data for F32/F16/BF16 (narrowed on write), else the matching typed array. */
export interface SafetensorsWriteTensor {
  shape: number[];
  data: SafetensorsData;
  /** Dtype to store; default F32 for a Float32Array, else the array's natural dtype. */
  dtype?: SafetensorsDtype;
}

function corrupt(message: string, field?: string): never {
  throw new EngineError('ENGINE_IO', `invalid safetensors: ${message}`, field);
}

function assertLittleEndianHost(): void {
  // Typed-array views read in host byte order; every host Node supports in practice is little-endian.
  if (endianness() !== 'LE') throw new EngineError('ENGINE_IO', 'safetensors I/O needs a little-endian host');
}

function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/**
 * Reads the 8-byte length prefix. Returns the header length, checked against the cap and the file size.
 */
export function parseSafetensorsPrefix(prefix: Uint8Array, fileBytes: number, maxHeaderBytes = MAX_SAFETENSORS_HEADER_BYTES): number {
  if (fileBytes < 8 || prefix.length < 8) corrupt(`file is ${fileBytes} bytes, shorter than the 8-byte header length`);
  const view = new DataView(prefix.buffer, prefix.byteOffset, 8);
  const n = view.getBigUint64(0, true);
  if (n > BigInt(maxHeaderBytes)) corrupt(`header length ${n} exceeds the ${maxHeaderBytes}-byte limit`);
  const len = Number(n);
  if (len < 2) corrupt(`header length ${len} is too small for a JSON object`);
  if (8 + len > fileBytes) corrupt(`header length ${len} runs past the end of the ${fileBytes}-byte file`);
  return len;
}

function isDtype(v: unknown): v is SafetensorsDtype {
  return typeof v === 'string' && Object.prototype.hasOwnProperty.call(DTYPE_BYTES, v);
}

function checkOffset(v: unknown, name: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) corrupt(`tensor "${name}": data_offsets must be non-negative integers`, name);
  return v;
}

/**
 * Parses and checks a header: strict UTF-8 JSON object, known dtypes, non-negative integer shapes,
 * byte ranges that match dtype × shape and tile the data section exactly (start at 0, contiguous,
 * no overlap, no gap, end at the end of the file), string-to-string `__metadata__`.
 *
 * @example
 * ```ts
 * const header = parseSafetensorsHeader(headerBytes, fileSize - 8 - headerBytes.length);
 * header.dataStart; // 8 + headerBytes.length
 * header.tensors[0].dtype; // 'BF16'
 * ```
 */
export function parseSafetensorsHeader(headerBytes: Uint8Array, dataBytes: number): SafetensorsHeader {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(headerBytes);
  } catch {
    corrupt('header is not valid UTF-8');
  }
  if (text[0] !== '{') corrupt('header does not start with "{"');
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    corrupt(`header is not valid JSON (${(e as Error).message})`);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) corrupt('header is not a JSON object');

  let metadata: Record<string, string> | null = null;
  const tensors: SafetensorsTensorInfo[] = [];
  for (const [name, entry] of Object.entries(raw as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) corrupt('__metadata__ must be an object of strings', name);
      for (const [k, v] of Object.entries(entry)) {
        if (typeof v !== 'string') corrupt(`__metadata__.${k} must be a string`, name);
      }
      metadata = { ...(entry as Record<string, string>) };
      continue;
    }
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) corrupt(`tensor "${name}" is not an object`, name);
    const e = entry as Record<string, unknown>;
    const unknownKey = Object.keys(e).find((k) => k !== 'dtype' && k !== 'shape' && k !== 'data_offsets');
    if (unknownKey !== undefined) corrupt(`tensor "${name}" has unknown field "${unknownKey}"`, name);
    if (!isDtype(e.dtype)) corrupt(`tensor "${name}" has unknown dtype ${JSON.stringify(e.dtype)}`, name);
    if (!Array.isArray(e.shape) || e.shape.some((d) => typeof d !== 'number' || !Number.isSafeInteger(d) || d < 0)) {
      corrupt(`tensor "${name}": shape must be a list of non-negative integers`, name);
    }
    const shape = e.shape as number[];
    const count = numel(shape);
    if (!Number.isSafeInteger(count * DTYPE_BYTES[e.dtype])) corrupt(`tensor "${name}": shape [${shape}] is too large`, name);
    if (!Array.isArray(e.data_offsets) || e.data_offsets.length !== 2) corrupt(`tensor "${name}": data_offsets must be [begin, end]`, name);
    const begin = checkOffset(e.data_offsets[0], name);
    const end = checkOffset(e.data_offsets[1], name);
    if (end < begin) corrupt(`tensor "${name}": data_offsets end ${end} is before begin ${begin}`, name);
    const expected = count * DTYPE_BYTES[e.dtype];
    if (end - begin !== expected) {
      corrupt(`tensor "${name}": ${e.dtype}[${shape}] needs ${expected} bytes but data_offsets span ${end - begin}`, name);
    }
    if (end > dataBytes) corrupt(`tensor "${name}": data_offsets end ${end} is past the ${dataBytes}-byte data section`, name);
    tensors.push({ name, dtype: e.dtype, shape: [...shape], dataOffsets: [begin, end] });
  }
  tensors.sort((a, b) => a.dataOffsets[0] - b.dataOffsets[0] || a.dataOffsets[1] - b.dataOffsets[1]);
  let cursor = 0;
  for (const t of tensors) {
    if (t.dataOffsets[0] < cursor) corrupt(`tensor "${t.name}" overlaps the tensor before it (begins at ${t.dataOffsets[0]}, previous ends at ${cursor})`, t.name);
    if (t.dataOffsets[0] > cursor) corrupt(`gap in the data section before tensor "${t.name}" (bytes ${cursor}..${t.dataOffsets[0]} belong to no tensor)`, t.name);
    cursor = t.dataOffsets[1];
  }
  if (cursor !== dataBytes) corrupt(`data section is ${dataBytes} bytes but the tensors cover ${cursor}`);
  return { tensors, metadata, dataStart: 8 + headerBytes.length, dataBytes };
}

/** Decodes a tensor's raw little-endian bytes (any alignment) into typed data. */
export function decodeTensorBytes(dtype: SafetensorsDtype, shape: readonly number[], bytes: Uint8Array): SafetensorsData {
  assertLittleEndianHost();
  const n = numel(shape);
  if (bytes.length !== n * DTYPE_BYTES[dtype]) corrupt(`${dtype}[${shape}] needs ${n * DTYPE_BYTES[dtype]} bytes, got ${bytes.length}`);
  // Bytes that own their whole buffer (a fresh read from a file) are viewed in place; others are copied,
  // both because they may sit at an offset no typed array can be aligned to and so the result never
  // aliases the caller's buffer.
  const copied = bytes.byteOffset % 8 !== 0;
  const aligned = copied ? bytes.slice() : bytes;
  const owned = copied || (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer);
  const buf = aligned.buffer as ArrayBuffer;
  const off = aligned.byteOffset;
  const own = <T>(make: (b: ArrayBuffer) => T): T => (owned ? make(buf) : make(buf.slice(off, off + bytes.length)));
  switch (dtype) {
    case 'F32':
      return own((b) => new Float32Array(b));
    case 'F16':
      return decodeFloat16(new Uint16Array(buf, off, n));
    case 'BF16':
      return decodeBfloat16(new Uint16Array(buf, off, n));
    case 'F64':
      return own((b) => new Float64Array(b));
    case 'I64':
      return own((b) => new BigInt64Array(b));
    case 'U64':
      return own((b) => new BigUint64Array(b));
    case 'I32':
      return own((b) => new Int32Array(b));
    case 'U32':
      return own((b) => new Uint32Array(b));
    case 'I16':
      return own((b) => new Int16Array(b));
    case 'U16':
      return own((b) => new Uint16Array(b));
    case 'I8':
      return own((b) => new Int8Array(b));
    case 'U8':
    case 'BOOL':
      return own((b) => new Uint8Array(b));
    default:
      throw new EngineError('ENGINE_IO', `safetensors dtype ${dtype} cannot be decoded (supported: F64, F32, F16, BF16, I64, U64, I32, U32, I16, U16, I8, U8, BOOL)`);
  }
}

/**
 * Float32 values of decoded data: floats as they are (F64 rounded), integers converted.
 *
 * @example
 * ```ts
 * toFloat32(new Int32Array([1, 2])); // Float32Array [1, 2]
 * ```
 */
export function toFloat32(data: SafetensorsData): Float32Array {
  if (data instanceof Float32Array) return data;
  const out = new Float32Array(data.length);
  for (let i = 0; i < data.length; i++) out[i] = Number(data[i]);
  return out;
}

function naturalDtype(data: SafetensorsData): SafetensorsDtype {
  if (data instanceof Float32Array) return 'F32';
  if (data instanceof Float64Array) return 'F64';
  if (data instanceof BigInt64Array) return 'I64';
  if (data instanceof BigUint64Array) return 'U64';
  if (data instanceof Int32Array) return 'I32';
  if (data instanceof Uint32Array) return 'U32';
  if (data instanceof Int16Array) return 'I16';
  if (data instanceof Uint16Array) return 'U16';
  if (data instanceof Int8Array) return 'I8';
  return 'U8';
}

/** Checks a tensor to write and settles its dtype. */
function planTensor(name: string, t: SafetensorsWriteTensor): { dtype: SafetensorsDtype; bytes: number } {
  if (name === '__metadata__' || name.length === 0) throw new EngineError('ENGINE_IO', `invalid tensor name ${JSON.stringify(name)}`, name);
  if (!Array.isArray(t.shape) || t.shape.some((d) => !Number.isSafeInteger(d) || d < 0)) {
    throw new EngineError('ENGINE_IO', `tensor "${name}": shape must be a list of non-negative integers`, name);
  }
  const dtype = t.dtype ?? naturalDtype(t.data);
  const n = numel(t.shape);
  if (t.data.length !== n) throw new EngineError('ENGINE_IO', `tensor "${name}": shape [${t.shape}] needs ${n} values, data has ${t.data.length}`, name);
  const natural = naturalDtype(t.data);
  const ok =
    dtype === natural || ((dtype === 'F16' || dtype === 'BF16' || dtype === 'F64') && t.data instanceof Float32Array) || (dtype === 'BOOL' && t.data instanceof Uint8Array);
  if (!ok) throw new EngineError('ENGINE_IO', `tensor "${name}": cannot write ${natural} data as ${dtype}`, name);
  if (dtype === 'F8_E4M3' || dtype === 'F8_E5M2') throw new EngineError('ENGINE_IO', `tensor "${name}": writing ${dtype} is not supported`, name);
  return { dtype, bytes: n * DTYPE_BYTES[dtype] };
}

/** Elements converted per chunk when narrowing, so a huge tensor never needs a second full-size copy. */
const CHUNK_ELEMENTS = 1 << 20;

/** Yields a tensor's little-endian bytes in chunks (views where no conversion is needed). */
function* tensorChunks(dtype: SafetensorsDtype, data: SafetensorsData): Generator<Uint8Array> {
  if (dtype === 'F16' || dtype === 'BF16' || (dtype === 'F64' && data instanceof Float32Array)) {
    const src = data as Float32Array;
    for (let i = 0; i < src.length; i += CHUNK_ELEMENTS) {
      const part = src.subarray(i, Math.min(src.length, i + CHUNK_ELEMENTS));
      const out = dtype === 'F16' ? encodeFloat16(part) : dtype === 'BF16' ? encodeBfloat16(part) : Float64Array.from(part);
      yield new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
    }
    return;
  }
  yield new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** Builds the header bytes (JSON padded with spaces to a multiple of 8, as the reference writer does). */
function buildHeader(entries: Array<{ name: string; dtype: SafetensorsDtype; shape: number[]; bytes: number }>, metadata?: Record<string, string>): Uint8Array {
  const header: Record<string, unknown> = {};
  if (metadata && Object.keys(metadata).length > 0) {
    for (const [k, v] of Object.entries(metadata)) {
      if (typeof v !== 'string') throw new EngineError('ENGINE_IO', `metadata.${k} must be a string`, k);
    }
    header.__metadata__ = metadata;
  }
  let offset = 0;
  for (const e of entries) {
    header[e.name] = { dtype: e.dtype, shape: e.shape, data_offsets: [offset, offset + e.bytes] };
    offset += e.bytes;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(8 + padded).fill(0x20, 8);
  new DataView(out.buffer).setBigUint64(0, BigInt(padded), true);
  out.set(json, 8);
  return out;
}

function planAll(tensors: Iterable<[string, SafetensorsWriteTensor]>) {
  const seen = new Set<string>();
  const plan: Array<{ name: string; dtype: SafetensorsDtype; shape: number[]; bytes: number; data: SafetensorsData }> = [];
  for (const [name, t] of tensors) {
    if (seen.has(name)) throw new EngineError('ENGINE_IO', `duplicate tensor name "${name}"`, name);
    seen.add(name);
    const { dtype, bytes } = planTensor(name, t);
    plan.push({ name, dtype, shape: [...t.shape], bytes, data: t.data });
  }
  return plan;
}

/**
 * Serialises tensors into one in-memory safetensors buffer (for small files and tests; use
 * {@link writeSafetensors} for model weights).
 *
 * @example
 * ```ts
 * const bytes = encodeSafetensors(new Map([['w', { shape: [2], data: new Float32Array([1, 2]), dtype: 'BF16' }]]));
 * ```
 */
export function encodeSafetensors(tensors: Iterable<[string, SafetensorsWriteTensor]>, metadata?: Record<string, string>): Uint8Array {
  assertLittleEndianHost();
  const plan = planAll(tensors);
  const header = buildHeader(plan, metadata);
  const total = header.length + plan.reduce((a, p) => a + p.bytes, 0);
  const out = new Uint8Array(total);
  out.set(header, 0);
  let at = header.length;
  for (const p of plan) {
    for (const chunk of tensorChunks(p.dtype, p.data)) {
      out.set(chunk, at);
      at += chunk.length;
    }
  }
  return out;
}

/**
 * Parses a whole in-memory safetensors buffer.
 *
 * @example
 * ```ts
 * const { tensors, metadata } = decodeSafetensors(fs.readFileSync('adapter_model.safetensors'));
 * ```
 */
export function decodeSafetensors(
  bytes: Uint8Array,
  maxHeaderBytes = MAX_SAFETENSORS_HEADER_BYTES,
): { tensors: Map<string, SafetensorsTensor>; metadata: Record<string, string> | null } {
  const len = parseSafetensorsPrefix(bytes, bytes.length, maxHeaderBytes);
  const header = parseSafetensorsHeader(bytes.subarray(8, 8 + len), bytes.length - 8 - len);
  const dataStart = 8 + len;
  const tensors = new Map<string, SafetensorsTensor>();
  for (const t of header.tensors) {
    const raw = bytes.subarray(dataStart + t.dataOffsets[0], dataStart + t.dataOffsets[1]);
    tensors.set(t.name, { dtype: t.dtype, shape: t.shape, data: decodeTensorBytes(t.dtype, t.shape, raw) });
  }
  return { tensors, metadata: header.metadata };
}

/** Reads exactly `length` bytes at `position`, in pieces under the 2 GiB limit of one read call. */
async function readExactly(handle: FileHandle, position: number, length: number, path: string): Promise<Uint8Array> {
  const out = new Uint8Array(length);
  const step = 1 << 30;
  let done = 0;
  while (done < length) {
    const { bytesRead } = await handle.read(out, done, Math.min(step, length - done), position + done);
    if (bytesRead === 0) throw new EngineError('ENGINE_IO', `${path}: unexpected end of file at byte ${position + done}`, path);
    done += bytesRead;
  }
  return out;
}

/**
 * An open safetensors file: the header is read and checked on open; tensors are read one at a time by
 * offset. Close it when done (or use {@link readSafetensors}).
 *
 * @example
 * ```ts
 * const file = await SafetensorsFile.open('model.safetensors');
 * try {
 *   for (const info of file.header.tensors) console.log(info.name, info.dtype, info.shape);
 *   const embed = await file.readFloat32('model.embed_tokens.weight');
 * } finally {
 *   await file.close();
 * }
 * ```
 */
export class SafetensorsFile {
  private readonly byName: Map<string, SafetensorsTensorInfo>;

  private constructor(
    readonly path: string,
    private readonly handle: FileHandle,
    readonly header: SafetensorsHeader,
  ) {
    this.byName = new Map(header.tensors.map((t) => [t.name, t]));
  }

  /** Opens and validates a file; throws `ENGINE_IO` naming the problem for a corrupt one. */
  static async open(path: string, options: { maxHeaderBytes?: number } = {}): Promise<SafetensorsFile> {
    let handle: FileHandle;
    try {
      handle = await open(path, 'r');
    } catch (e) {
      throw new EngineError('ENGINE_IO', `cannot open ${path}: ${(e as Error).message}`, path);
    }
    try {
      const size = (await handle.stat()).size;
      const prefix = size >= 8 ? await readExactly(handle, 0, 8, path) : new Uint8Array(0);
      const len = parseSafetensorsPrefix(prefix, size, options.maxHeaderBytes);
      const headerBytes = await readExactly(handle, 8, len, path);
      const header = parseSafetensorsHeader(headerBytes, size - 8 - len);
      return new SafetensorsFile(path, handle, header);
    } catch (e) {
      await handle.close();
      if (e instanceof EngineError) throw new EngineError(e.code, `${path}: ${e.message}`, e.field);
      throw e;
    }
  }

  /** Names of the tensors, in file order. */
  get names(): string[] {
    return this.header.tensors.map((t) => t.name);
  }

  /** Where a tensor lies, or undefined. */
  info(name: string): SafetensorsTensorInfo | undefined {
    return this.byName.get(name);
  }

  private require(name: string): SafetensorsTensorInfo {
    const info = this.byName.get(name);
    if (!info) throw new EngineError('ENGINE_IO', `${this.path}: no tensor named "${name}"`, name);
    return info;
  }

  /** A tensor's raw little-endian bytes. */
  async readBytes(name: string): Promise<Uint8Array> {
    const info = this.require(name);
    return readExactly(this.handle, this.header.dataStart + info.dataOffsets[0], info.dataOffsets[1] - info.dataOffsets[0], this.path);
  }

  /** A tensor decoded with its file dtype (floats widened to float32). */
  async readTensor(name: string): Promise<SafetensorsTensor> {
    const info = this.require(name);
    return { dtype: info.dtype, shape: [...info.shape], data: decodeTensorBytes(info.dtype, info.shape, await this.readBytes(name)) };
  }

  /** A tensor as float32 values, whatever its numeric dtype. */
  async readFloat32(name: string): Promise<{ shape: number[]; data: Float32Array }> {
    const t = await this.readTensor(name);
    return { shape: t.shape, data: toFloat32(t.data) };
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}

/**
 * Reads every tensor of a file as float32 (the engine's weight format), with the file's metadata and
 * each tensor's stored dtype.
 *
 * @example
 * ```ts
 * const { tensors, dtypes } = await readSafetensors('model.safetensors');
 * tensors.get('model.norm.weight')!.data; // Float32Array
 * dtypes.get('model.norm.weight'); // 'BF16'
 * ```
 */
export async function readSafetensors(path: string): Promise<{
  tensors: Map<string, { shape: number[]; data: Float32Array }>;
  dtypes: Map<string, SafetensorsDtype>;
  metadata: Record<string, string> | null;
}> {
  const file = await SafetensorsFile.open(path);
  try {
    const tensors = new Map<string, { shape: number[]; data: Float32Array }>();
    const dtypes = new Map<string, SafetensorsDtype>();
    for (const info of file.header.tensors) {
      tensors.set(info.name, await file.readFloat32(info.name));
      dtypes.set(info.name, info.dtype);
    }
    return { tensors, dtypes, metadata: file.header.metadata };
  } finally {
    await file.close();
  }
}

/**
 * Writes tensors to a safetensors file, streaming one tensor (and for narrowed dtypes, one chunk) at a
 * time. `dtype` narrows every float32 tensor that does not set its own (F16/BF16 round to nearest even).
 * Writes to `path + '.tmp'` and renames, so a crash never leaves a truncated file under the real name.
 * Returns the file size in bytes.
 *
 * @example
 * ```ts
 * await writeSafetensors('model.safetensors', weights, { dtype: 'BF16', metadata: { format: 'pt' } });
 * ```
 */
export async function writeSafetensors(
  path: string,
  tensors: Iterable<[string, SafetensorsWriteTensor]>,
  options: { dtype?: SafetensorsFloatDtype; metadata?: Record<string, string> } = {},
): Promise<number> {
  assertLittleEndianHost();
  const withDefault = [...tensors].map(([name, t]): [string, SafetensorsWriteTensor] => [
    name,
    t.dtype === undefined && options.dtype !== undefined && t.data instanceof Float32Array ? { ...t, dtype: options.dtype } : t,
  ]);
  const plan = planAll(withDefault);
  const header = buildHeader(plan, options.metadata);
  const tmp = `${path}.tmp`;
  const handle = await open(tmp, 'w');
  let size = 0;
  try {
    const write = async (chunk: Uint8Array) => {
      let done = 0;
      while (done < chunk.length) {
        const { bytesWritten } = await handle.write(chunk, done, chunk.length - done);
        done += bytesWritten;
      }
      size += chunk.length;
    };
    await write(header);
    for (const p of plan) for (const chunk of tensorChunks(p.dtype, p.data)) await write(chunk);
    await handle.close();
  } catch (e) {
    await handle.close().catch(() => undefined);
    await rm(tmp, { force: true });
    throw new EngineError('ENGINE_IO', `cannot write ${path}: ${(e as Error).message}`, path);
  }
  await rename(tmp, path);
  return size;
}
