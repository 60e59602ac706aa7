import { EngineError } from '../errors';
import { encodeBfloat16 } from '../io/half-precision';
import { engineAddon, NATIVE_DTYPES, type EngineAddon, type MappingHandle, type NativeDtype, type TensorHandle } from './addon';

/** Live native tensors by id: kernels receive the id as an attribute (tfjs attributes are plain values). */
const live = new Map<number, NativeTensor>();
let nextId = 1;

function requireAddon(): EngineAddon {
  const a = engineAddon();
  if (!a) throw new EngineError('ENGINE_BACKEND_UNAVAILABLE', "native tensors need the engine's native addon, which is not loaded", 'native');
  return a;
}

/**
 * A tensor held by the native addon, outside the wasm heap: a frozen weight in float32, bfloat16 or
 * float16, copied from JavaScript or viewing a memory-mapped safetensors file. The engine's native
 * kernels read it directly (16-bit values are widened inside the kernel). Free it with
 * {@link NativeTensor.dispose}; an unreachable one is freed by the garbage collector too.
 */
export class NativeTensor {
  readonly id = nextId++;
  private disposed = false;

  private constructor(
    readonly handle: TensorHandle,
    readonly shape: readonly number[],
    readonly dtype: NativeDtype,
  ) {
    live.set(this.id, this);
  }

  /** Elements. */
  get size(): number {
    return this.shape.reduce((a, b) => a * b, 1);
  }

  /** Bytes of its values. */
  get byteLength(): number {
    return this.size * (this.dtype === 'F32' ? 4 : 2);
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  /** A copy of float32 values; `dtype` `BF16` rounds them to bfloat16 (nearest even) first. */
  static fromFloat32(data: Float32Array, shape: readonly number[], dtype: 'F32' | 'BF16' = 'F32'): NativeTensor {
    const a = requireAddon();
    checkSize(data.length, shape);
    const handle = dtype === 'F32' ? a.tensorCopy(data, NATIVE_DTYPES.F32) : a.tensorCopy(encodeBfloat16(data), NATIVE_DTYPES.BF16);
    return new NativeTensor(handle, [...shape], dtype);
  }

  /** A view of `shape` elements of `dtype` at `byteOffset` of a mapped file (see {@link MappedFile}). */
  static view(file: MappedFile, byteOffset: number, shape: readonly number[], dtype: NativeDtype): NativeTensor {
    const handle = requireAddon().tensorView(
      file.handle,
      byteOffset,
      NATIVE_DTYPES[dtype],
      shape.reduce((x, y) => x * y, 1),
    );
    return new NativeTensor(handle, [...shape], dtype);
  }

  /** The tensor with this id (kernels use it), or an error if it was disposed. @internal */
  static byId(id: number): NativeTensor {
    const t = live.get(id);
    if (!t) throw new EngineError('ENGINE_DISPOSED', `native tensor ${id} was disposed`);
    return t;
  }

  /** Its values widened to float32 (a copy), optionally only `count` from element `start`. */
  toFloat32(start = 0, count = this.size - start): Float32Array {
    this.assertLive();
    const out = new Float32Array(count);
    requireAddon().tensorRead(this.handle, start, out);
    return out;
  }

  /** Gives it a float32 copy on the GPU (opened by `initBackend`), which products with it then use. */
  toDevice(): void {
    this.assertLive();
    requireAddon().tensorToDevice(this.handle);
  }

  /** Frees its memory now (a mapped tensor drops its share of the mapping). */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    live.delete(this.id);
    engineAddon()?.tensorFree(this.handle);
  }

  private assertLive(): void {
    if (this.disposed) throw new EngineError('ENGINE_DISPOSED', 'the native tensor was disposed');
  }
}

function checkSize(length: number, shape: readonly number[]): void {
  const n = shape.reduce((a, b) => a * b, 1);
  if (n !== length) throw new EngineError('ENGINE_INVALID_INPUT', `shape [${shape}] needs ${n} values, got ${length}`, 'shape');
}

/**
 * A file mapped into memory read-only (shared with the page cache and with other processes that map
 * it), for {@link NativeTensor.view}. Tensors keep the mapping alive; closing the file drops only the
 * file's own reference.
 */
export class MappedFile {
  private constructor(
    readonly path: string,
    readonly handle: MappingHandle,
  ) {}

  static open(path: string): MappedFile {
    return new MappedFile(path, requireAddon().mapFile(path));
  }
}
