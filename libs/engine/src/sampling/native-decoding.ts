import type * as tf from '@tensorflow/tfjs-core';
import { EngineError } from '../errors';
import type { KvLayer } from '../model/kv-cache';
import { headDim } from '../model/model-config';
import { ropeTables } from '../model/rope';
import type { Model } from '../model/transformer';
import { engineAddon, type DecodeLoraHandle, type DecodeStage, type DecoderHandle, type EngineAddon, type KvHandle } from '../native/addon';

/*
 * Decoding in the native addon (native/decode.c): after the prefill (TensorFlow.js, which also gives the
 * prompt's log-probs and handles every adapter form), each new token of every row goes through the whole
 * model in one call, against a key/value cache held natively: no tensor per step in the wasm heap, no
 * JavaScript between a layer's stages, every stage on the addon's threads. Used for models whose matrices
 * are native (frozen bases under LoRA, models that only sample) when no GPU runs their products; the
 * TensorFlow.js step remains for the rest and as the reference the native one is tested against.
 */

let enabled = true;

/** Whether the addon refused an allocation (its errors may come from another realm than this module's `Error`). */
function outOfNativeMemory(e: unknown): boolean {
  return typeof e === 'object' && e !== null && /out of native memory/.test(String((e as { message?: unknown }).message));
}
const profile: Record<DecodeStage, number> & { steps: number; rowSteps: number } = {
  qkv: 0,
  attention: 0,
  o: 0,
  gateUp: 0,
  down: 0,
  head: 0,
  lora: 0,
  elementwise: 0,
  steps: 0,
  rowSteps: 0,
};

/** Seconds native decoding steps have spent per stage in this process (a profile by kernel, for benchmarks), and the steps and row-steps they ran. */
export function nativeDecodeProfile(): Readonly<typeof profile> {
  return { ...profile };
}

/** Turns native decoding off (tests and benchmarks compare it with the TensorFlow.js step). @internal */
export function setNativeDecoding(on: boolean): void {
  enabled = on;
}

/** A sampling call's native decoding state: the decoder, its cache and LoRA terms, the rows' positions. @internal */
export class NativeDecoding {
  private readonly positions: Int32Array;
  private readonly tokens: Int32Array;
  private readonly all: Float32Array;
  private steps = 0;
  private rowSteps = 0;
  /** The rows a step computes, ascending (all at first; see {@link NativeDecoding.retire}). */
  private active: Int32Array;
  /** The next-token logits of the last step, `[active rows, vocab]` in {@link NativeDecoding.rowsStepped}'s order (reused: read them before the next step). */
  logits: Float32Array;

  private constructor(
    private readonly addon: EngineAddon,
    private readonly model: Model,
    private readonly decoder: DecoderHandle,
    private readonly kv: KvHandle,
    private readonly lora: DecodeLoraHandle | null,
    readonly rows: number,
  ) {
    this.positions = new Int32Array(rows);
    this.tokens = new Int32Array(rows);
    this.all = new Float32Array(rows * model.config.vocab_size);
    this.logits = this.all;
    this.active = Int32Array.from({ length: rows }, (_, r) => r);
  }

  /** The rows the next step computes, ascending: those not retired. */
  get rowsStepped(): Int32Array {
    return this.active;
  }

  /**
   * Leaves rows that finished out of the next steps (`done[row]` set): a step costs what its remaining
   * rows cost, where a batch kept whole would compute every finished row to the end of the longest.
   * Their cache stays as it was. At least one row must remain.
   */
  retire(done: Uint8Array): void {
    const keep = this.active.filter((row) => !done[row]);
    if (keep.length === this.active.length || keep.length === 0) return;
    this.addon.kvSetActive(this.kv, keep);
    this.active = keep;
  }

  /**
   * Native decoding of `model` for `rows` rows of up to `capacity` positions (prompt and new tokens) under
   * the model's current adapter selection, or undefined when it does not apply (no addon, weights not
   * native, a GPU, turned off) or its cache cannot be reserved: the cache is reserved for the whole
   * capacity up front (most of its pages are touched only as positions fill), and a capacity the native
   * allocator refuses (a large `maxNewTokens` on a large model) leaves the call to the TensorFlow.js step,
   * whose cache grows a token at a time, so native decoding never refuses what the tfjs step would run.
   */
  static open(model: Model, rows: number, capacity: number): NativeDecoding | undefined {
    const addon = engineAddon();
    if (!enabled || !addon) return undefined;
    const inputs = model.nativeDecodeInputs(rows);
    if (!inputs) return undefined;
    const c = model.config;
    const dims = Float64Array.of(c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.num_key_value_heads, headDim(c), c.intermediate_size, c.vocab_size, c.rms_norm_eps);
    const decoder = addon.decoderCreate(
      dims,
      inputs.tensors.map((t) => t.handle),
      inputs.norms,
      inputs.biases ?? null,
    );
    let kv: KvHandle;
    try {
      kv = addon.kvCreate(decoder, rows, capacity);
    } catch (e) {
      addon.release(decoder);
      if (outOfNativeMemory(e)) return undefined;
      throw e;
    }
    try {
      const lora = inputs.lora.length > 0 ? addon.loraCreate(decoder, rows, inputs.lora) : null;
      return new NativeDecoding(addon, model, decoder, kv, lora, rows);
    } catch (e) {
      addon.release(kv);
      addon.release(decoder);
      throw outOfNativeMemory(e) ? new EngineError('ENGINE_OUT_OF_MEMORY', (e as Error).message, 'native') : e;
    }
  }

  /**
   * Fills the cache from a prefill's keys and values (`[rows, kvHeads, S, hd]` per layer) and its key mask
   * `[rows, S]`; each row's next position is its count of real tokens. With `rowSource`, `present` holds
   * distinct prompts and row r continues prompt rowSource[r]: when prompts repeat, each prompt's keys and
   * values are held once and read by all its rows (the native cache's shared prompts), else copied per row.
   */
  load(present: readonly KvLayer[], keyMask: Uint8Array, rowSource?: Int32Array): void {
    const len = keyMask.length / this.rows;
    const sources = present[0]?.k.shape[0] ?? this.rows;
    const shared = rowSource !== undefined && sources < this.rows;
    if (shared) this.addon.kvShare(this.kv, rowSource, sources, len);
    const rows = (t: tf.Tensor) => {
      const x = t.dataSync() as Float32Array;
      if (!rowSource || shared) return x;
      const block = t.size / t.shape[0];
      const out = new Float32Array(this.rows * block);
      rowSource.forEach((source, r) => out.set(x.subarray(source * block, (source + 1) * block), r * block));
      return out;
    };
    present.forEach((l, layer) => this.addon.kvLoad(this.kv, layer, rows(l.k), rows(l.v), len));
    this.addon.kvSetMask(this.kv, keyMask, len);
    for (let r = 0; r < this.rows; r++) {
      let n = 0;
      for (let j = 0; j < len; j++) n += keyMask[r * len + j];
      this.positions[r] = n;
    }
  }

  /**
   * One token per row through the model (`tokens[row]` for every row of the batch; only the rows not
   * retired are read); the next-token logits of those rows land in {@link NativeDecoding.logits}.
   */
  step(tokens: Int32Array): Float32Array {
    const n = this.active.length;
    const positions = new Int32Array(n);
    this.active.forEach((row, i) => {
      this.tokens[i] = tokens[row];
      positions[i] = this.positions[row]++;
    });
    const { cos, sinSigned } = ropeTables(positions, headDim(this.model.config), this.model.config.rope_theta);
    this.logits = this.all.subarray(0, n * this.model.config.vocab_size);
    this.addon.decodeStep(this.decoder, this.kv, this.lora, this.tokens, cos, sinSigned, this.logits);
    this.steps++;
    this.rowSteps += n;
    return this.logits;
  }

  /** Frees the cache, the LoRA terms and the decoder (adding the cache's stage times to the process's profile). */
  dispose(): void {
    const info = this.addon.kvInfo(this.kv);
    for (const [stage, seconds] of Object.entries(info.stageSeconds)) profile[stage as DecodeStage] += seconds;
    profile.steps += this.steps;
    profile.rowSteps += this.rowSteps;
    this.addon.release(this.kv);
    if (this.lora) this.addon.release(this.lora);
    this.addon.release(this.decoder);
  }
}
