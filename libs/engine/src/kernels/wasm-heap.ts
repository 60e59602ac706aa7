import { EngineError } from '../errors';

/*
 * The wasm backend's heap: one 32-bit WebAssembly memory (4 GiB at most) that holds every tensor.
 *
 * tfjs-backend-wasm allocates each tensor with the module's `_malloc` and never checks the result.
 * Near the limit that malloc does not fail cleanly: measured here, a 500 MB request with 4.1 GB in use
 * returned an address past the end of memory, and the next write raised `memory access out of bounds`
 * (or `Aborted()`), after which the backend is unusable. So every allocation is accounted for here and
 * refused *before* it reaches malloc once the live bytes would pass the budget: the engine then raises
 * `ENGINE_OUT_OF_MEMORY` naming the size and the setting, and keeps running.
 */

/** The largest wasm32 memory (`getHeapMax()` of tfjs-backend-wasm's module). */
export const WASM_HEAP_MAX = 4_294_901_760;

/**
 * Room left for allocations the engine cannot see (XNNPACK's workspaces, the module's own state) and
 * for fragmentation: the budget of tensors is the heap's maximum less this.
 */
export const WASM_HEAP_RESERVE = 256 * 1024 * 1024;

interface WasmModule {
  _malloc(bytes: number): number;
  _free(pointer: number): void;
  HEAPU8: Uint8Array;
}

/** Live and peak bytes of tensors in the heap, and the budget allocations are checked against. */
export interface WasmHeapUsage {
  liveBytes: number;
  peakBytes: number;
  budgetBytes: number;
  /** Current size of the wasm memory (it grows, never shrinks). */
  heapBytes: number;
}

let watched: WasmModule | undefined;
const sizes = new Map<number, number>();
let live = 0;
let peak = 0;
let budget = WASM_HEAP_MAX - WASM_HEAP_RESERVE;

const GIB = 1024 ** 3;
const gib = (bytes: number) => `${(bytes / GIB).toFixed(2)} GiB`;

/**
 * Installs the accounting on the wasm backend's module (once per module). `budgetBytes` caps the live
 * bytes of tensors (default: the heap's maximum less {@link WASM_HEAP_RESERVE}).
 */
export function watchWasmHeap(wasm: WasmModule, budgetBytes?: number): void {
  if (budgetBytes !== undefined) budget = Math.min(budgetBytes, WASM_HEAP_MAX - WASM_HEAP_RESERVE);
  if (watched === wasm) return;
  watched = wasm;
  // Emscripten's exports start as stubs that replace themselves on their first call: resolve them first,
  // or the stub would overwrite the wrapper.
  wasm._free(wasm._malloc(8));
  const malloc = wasm._malloc.bind(wasm);
  const free = wasm._free.bind(wasm);
  wasm._malloc = (bytes: number): number => {
    if (live + bytes > budget) {
      throw new EngineError(
        'ENGINE_OUT_OF_MEMORY',
        `the engine's wasm heap is full: ${gib(bytes)} more were needed with ${gib(live)} of tensors already live, ` +
          `over the budget of ${gib(budget)} (OPENTINKER_ENGINE_MEMORY_MB; the heap holds 4 GiB at most). ` +
          'Use smaller batches or shorter sequences, LoRA instead of full fine-tuning, or a smaller model',
        'memory',
      );
    }
    const pointer = malloc(bytes) >>> 0;
    if (bytes > 0 && (pointer === 0 || pointer + bytes > wasm.HEAPU8.length)) {
      // The allocator failed or handed out memory past the end (see above): never let tfjs write there.
      if (pointer !== 0) free(pointer);
      throw new EngineError('ENGINE_OUT_OF_MEMORY', `the engine's wasm heap could not allocate ${gib(bytes)} (${gib(live)} live, heap ${gib(wasm.HEAPU8.length)})`, 'memory');
    }
    sizes.set(pointer, bytes);
    live += bytes;
    if (live > peak) peak = live;
    return pointer;
  };
  wasm._free = (pointer: number): void => {
    const p = pointer >>> 0;
    const bytes = sizes.get(p);
    if (bytes !== undefined) {
      sizes.delete(p);
      live -= bytes;
    }
    free(pointer);
  };
}

/** Live, peak and budget bytes of the watched heap (zeros before the wasm backend starts). */
export function wasmHeapUsage(): WasmHeapUsage {
  return { liveBytes: live, peakBytes: peak, budgetBytes: budget, heapBytes: watched ? watched.HEAPU8.length : 0 };
}

/** Starts a new peak measurement from the current live bytes. */
export function resetWasmHeapPeak(): void {
  peak = live;
}
