import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';

/*
 * The engine's native addon (native/addon.c): its own matrix product (fp32 activations times fp32, bf16
 * or f16 weights, AVX-512 / AVX2 / portable, on a small thread pool), tensors kept outside the wasm heap
 * (copied or memory-mapped from safetensors files) and the fused language-model head. It is compiled at
 * install by `native/build.js` (plain `cc`, Node's headers, no node-gyp) and needs no library at run
 * time. Where it is missing (no C compiler at install) the engine still runs, on tfjs's own kernels,
 * with every tensor in the wasm heap, and says so once at start (`engineNotice`).
 */

/** Element types of native tensors (the addon's `ot_dtype`). */
export const NATIVE_DTYPES = { F32: 0, BF16: 1, F16: 2 } as const;
export type NativeDtype = keyof typeof NATIVE_DTYPES;

/** An opaque handle to a tensor held by the addon. */
export type TensorHandle = { readonly __nativeTensor: unique symbol };
/** An opaque handle to a memory-mapped file. */
export type MappingHandle = { readonly __nativeMapping: unique symbol };
/** Opaque handles of the native decoding step (native/decode.h): a decoder over a model's tensors, a key/value cache, a set of LoRA terms. */
export type DecoderHandle = { readonly __nativeDecoder: unique symbol };
export type KvHandle = { readonly __nativeKv: unique symbol };
export type DecodeLoraHandle = { readonly __nativeDecodeLora: unique symbol };
/** The stages of a native decoding step, as its profile names them. */
export type DecodeStage = 'qkv' | 'attention' | 'o' | 'gateUp' | 'down' | 'head' | 'lora' | 'elementwise';
/** One LoRA term of a decoding step: `[slot, r, A [in·r], B [r·out], mask [rows·r] | null]` (native/decode.h). */
export type DecodeLoraTerm = [number, number, Float32Array, Float32Array, Float32Array | null];

/** The addon's functions (native/addon.c documents each). */
export interface EngineAddon {
  info(): { kernel: string; threads: number };
  setThreads(threads: number): void;
  gemm(
    ta: boolean,
    tb: boolean,
    batch: number,
    m: number,
    n: number,
    k: number,
    a: Float32Array,
    strideA: number,
    b: Float32Array | TensorHandle,
    strideB: number,
    c: Float32Array,
  ): void;
  gemmAdd(m: number, n: number, k: number, a: Float32Array, b: Float32Array, c: Float32Array): void;
  tensorCopy(data: Float32Array | Uint16Array, dtype: number): TensorHandle;
  mapFile(path: string): MappingHandle;
  tensorView(mapping: MappingHandle, byteOffset: number, dtype: number, numel: number): TensorHandle;
  tensorFree(t: TensorHandle): void;
  tensorRead(t: TensorHandle, start: number, out: Float32Array): void;
  gatherRows(table: TensorHandle, rowLength: number, ids: Int32Array, out: Float32Array): void;
  tokenScores(
    h: Float32Array,
    n: number,
    d: number,
    w: Float32Array | TensorHandle,
    vocab: number,
    targets: Int32Array,
    logp: Float32Array,
    lse: Float32Array,
    entropy: Float32Array | null,
    ew: Float32Array | null,
  ): void;
  tokenScoresGradEw(n: number, d: number, w: TensorHandle, vocab: number, targets: Int32Array, dlogp: Float32Array, ew: Float32Array, dh: Float32Array): void;
  tokenScoresGrad(
    h: Float32Array,
    n: number,
    d: number,
    w: Float32Array | TensorHandle,
    vocab: number,
    targets: Int32Array,
    lse: Float32Array,
    entropy: Float32Array | null,
    dlogp: Float32Array,
    dent: Float32Array | null,
    dh: Float32Array,
    dw: Float32Array | null,
  ): void;
  memory(): { allocatedBytes: number; mappedBytes: number; deviceBytes: number };
  machineLimits(bytes: number, seconds: number): MachineLimits;
  rmsNorm(x: Float32Array, w: Float32Array, n: number, d: number, eps: number, y: Float32Array): void;
  rmsNormGrad(x: Float32Array, w: Float32Array, dy: Float32Array, n: number, d: number, eps: number, dx: Float32Array, dw: Float32Array | null): void;
  swiglu(g: Float32Array, u: Float32Array, count: number, y: Float32Array): void;
  swigluGrad(g: Float32Array, u: Float32Array, dy: Float32Array, count: number, dg: Float32Array, du: Float32Array): void;
  rope(x: Float32Array, cos: Float32Array, sin: Float32Array, rows: number, heads: number, hd: number, transpose: boolean, y: Float32Array): void;
  softmaxRows(x: Float32Array, bias: Float32Array | null, rows: number, s: number, group: number, period: number): void;
  softmaxGrad(y: Float32Array, dy: Float32Array, rows: number, s: number, dx: Float32Array): void;
  sampleRows(logits: Float32Array, rows: number, all: number, v: number, invT: number, u: Float64Array, token: Int32Array, logp: Float32Array, slogp: Float32Array): void;
  adamw(
    p: Float32Array,
    m: Float32Array,
    v: Float32Array,
    g: Float32Array,
    gscale: number,
    b1: number,
    b2: number,
    eps: number,
    decay: number,
    step: number,
    sqrtBc2: number,
  ): void;
  /** dims: `[layers, d, heads, kvHeads, headDim, intermediate, vocab, rmsEps]`; tensors: per layer q, k, v, o, gate, up, down, then the embedding and the head. */
  decoderCreate(dims: Float64Array, tensors: TensorHandle[], norms: Float32Array, biases: Float32Array | null): DecoderHandle;
  kvCreate(decoder: DecoderHandle, rows: number, capacity: number): KvHandle;
  kvLoad(kv: KvHandle, layer: number, k: Float32Array, v: Float32Array, length: number): void;
  kvShare(kv: KvHandle, rowSource: Int32Array, sources: number, prefixLength: number): void;
  kvSetActive(kv: KvHandle, rows: Int32Array): void;
  kvSetMask(kv: KvHandle, mask: Uint8Array, length: number): void;
  kvInfo(kv: KvHandle): { rows: number; capacity: number; length: number; bytes: number; stageSeconds: Record<DecodeStage, number> };
  loraCreate(decoder: DecoderHandle, rows: number, terms: DecodeLoraTerm[]): DecodeLoraHandle;
  decodeStep(decoder: DecoderHandle, kv: KvHandle, lora: DecodeLoraHandle | null, tokens: Int32Array, cos: Float32Array, sin: Float32Array, logits: Float32Array): void;
  /** Frees a decoder, cache or LoRA set now. */
  release(handle: DecoderHandle | KvHandle | DecodeLoraHandle): void;
  cudaOpen(device: number): CudaStatus;
  tensorToDevice(t: TensorHandle): void;
  /** The smallest product (multiply-adds) sent to the GPU; the GPU check lowers it so tiny models use it too. */
  cudaMinWork(work: number): void;
}

/** Whether products with native weights run on an NVIDIA GPU (native/cuda.c), and if not, why. */
export interface CudaStatus {
  ok: boolean;
  /** The device's name (e.g. `NVIDIA H200`). */
  name?: string;
  freeBytes?: number;
  totalBytes?: number;
  error?: string;
}

/** The machine's limits measured on the addon's threads (native/machine-limits.c). */
export interface MachineLimits {
  /** STREAM-style triad `a = b + s·c`, counted as three arrays moved, bytes/s. */
  triadBytesPerS: number;
  /** A plain read (sum) of an array far larger than the caches, bytes/s: what a decode pass streams weights at. */
  readBytesPerS: number;
  /** Peak fp32 FMA FLOP/s (0 without AVX-512). */
  fp32FlopsPerS: number;
  /** Peak AVX-512 BF16 dot-product FLOP/s (0 where the CPU lacks it). */
  bf16FlopsPerS: number;
}

/** What {@link loadEngineAddon} found. */
export interface NativeStatus {
  /** Whether the addon loaded. */
  ok: boolean;
  /** The matrix-product kernel this CPU runs (`avx512`, `avx2`, `generic`). */
  kernel?: string;
  /** Threads of the addon's pool. */
  threads?: number;
  /** Why the addon is not available. */
  error?: string;
}

// `require` exists in the CommonJS build; under Jest's ESM mode it does not, and the working directory
// (the repository root there) resolves the same node_modules.
const nodeRequire: NodeJS.Require = typeof require === 'function' ? require : createRequire(join(process.cwd(), 'package.json'));

let addon: EngineAddon | undefined;
let status: NativeStatus | undefined;

/** Where native/build.js writes the addon: inside the package, beside dist/. */
export function engineAddonPath(): string {
  return join(dirname(nodeRequire.resolve('@opentinker/engine/package.json')), 'native', 'build', 'engine.node');
}

/**
 * Loads the addon once (later calls return the first answer) and sizes its thread pool: `threads`, else
 * the cores this process may use.
 */
export function loadEngineAddon(threads?: number): NativeStatus {
  if (status) return status;
  const file = engineAddonPath();
  if (!existsSync(file)) {
    status = { ok: false, error: `the native addon is not built (${file}; \`node libs/engine/native/build.js\` builds it and needs a C compiler)` };
    return status;
  }
  try {
    const loaded = nodeRequire(file) as EngineAddon;
    loaded.setThreads(Math.max(1, Math.floor(threads ?? availableParallelism())));
    addon = loaded;
    status = { ok: true, ...loaded.info() };
  } catch (e) {
    status = { ok: false, error: e instanceof Error ? e.message.split('\n')[0] : String(e) };
  }
  return status;
}

/** The loaded addon, or undefined when it is not available (call {@link loadEngineAddon} first). */
export function engineAddon(): EngineAddon | undefined {
  return addon;
}

/**
 * The one line every entry point prints when the addon is missing: what it costs and how to get it.
 * Undefined when the addon loads.
 */
export function engineNotice(): string | undefined {
  const s = loadEngineAddon();
  if (s.ok) return undefined;
  const build = join(dirname(engineAddonPath()), '..', 'build.js');
  return (
    `engine: running WITHOUT its native addon (${s.error}): models stay inside the 4 GiB wasm heap (no weights outside it, ` +
    `no memory-mapped models) and training is about ${ADDON_SPEEDUP}× slower. Install a C compiler (Debian/Ubuntu: apt-get install build-essential) and run: node ${build}`
  );
}

/** Measured training speed-up of the addon over the XNNPACK fallback (engine bench, bench-a; see the README's Speed). */
const ADDON_SPEEDUP = 3;

/** Changes the addon's thread count (e.g. to the CPU slots a job holds). */
export function setNativeThreads(threads: number): void {
  if (!addon) return;
  addon.setThreads(Math.max(1, Math.floor(threads)));
  status = { ...status!, threads: addon.info().threads };
}

/** Bytes the addon holds: copied tensors, mapped files, and device copies on the GPU. */
export function nativeMemory(): { allocatedBytes: number; mappedBytes: number; deviceBytes: number } {
  return addon ? addon.memory() : { allocatedBytes: 0, mappedBytes: 0, deviceBytes: 0 };
}

/**
 * Measures the machine's memory bandwidth and peak multiply-add rate on the addon's threads (a few
 * seconds; for benchmarks). `arrayBytes` per array of the bandwidth test should be several times the
 * last-level cache. Undefined without the addon.
 */
export function measureMachineLimits(arrayBytes = 1 << 30, seconds = 0.5): MachineLimits | undefined {
  return addon?.machineLimits(arrayBytes, seconds);
}

let cuda: CudaStatus | undefined;

/**
 * Opens CUDA for the addon's products (once): `device` `cuda` insists (the status says why it failed),
 * `auto` opens it when the process was given GPUs (a non-empty `CUDA_VISIBLE_DEVICES`, as the worker
 * sets for a job with `resources.gpus`), `cpu` never does.
 */
export function openCuda(device: 'auto' | 'cuda' | 'cpu'): CudaStatus {
  if (cuda?.ok) return cuda;
  const visible = process.env.CUDA_VISIBLE_DEVICES;
  if (device === 'cpu') return (cuda = { ok: false, error: 'OPENTINKER_ENGINE_DEVICE=cpu' });
  if (device === 'auto' && !visible) return (cuda = { ok: false, error: 'no GPU given to this process (CUDA_VISIBLE_DEVICES is empty)' });
  if (!addon) return (cuda = { ok: false, error: status?.error ?? 'the native addon is not loaded' });
  cuda = addon.cudaOpen(0);
  return cuda;
}

/** Whether products with native weights run on the GPU. */
export function cudaReady(): boolean {
  return cuda?.ok === true;
}
