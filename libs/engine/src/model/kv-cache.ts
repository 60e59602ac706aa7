import * as tf from '@tensorflow/tfjs-core';

/** Keys and values of one layer, `[B, KV, S, hd]` each, rotary positions already applied to keys. */
export interface KvLayer {
  k: tf.Tensor;
  v: tf.Tensor;
}

/**
 * The key/value cache of a batch during sampling: per-layer tensors plus the key mask `[B, S]`
 * (1 = real token) that decides what later tokens may attend to and their positions. The cache owns
 * its tensors: {@link KvCache.replace} disposes the previous ones, {@link KvCache.dispose} the rest.
 */
export class KvCache {
  private tensors: KvLayer[];

  constructor(
    readonly batchSize: number,
    layers: KvLayer[],
    /** Row-major `[batchSize, length]`. */
    public keyMask: Uint8Array,
  ) {
    this.tensors = layers;
  }

  /** Cached positions per row (padding included). */
  get length(): number {
    return this.keyMask.length / this.batchSize;
  }

  get layers(): readonly KvLayer[] {
    return this.tensors;
  }

  /** Swaps in the layers of the next step (which extend the current ones) and its longer key mask. */
  replace(layers: KvLayer[], keyMask: Uint8Array): void {
    const old = this.tensors;
    this.tensors = layers;
    this.keyMask = keyMask;
    for (const l of old) tf.dispose([l.k, l.v]);
  }

  /** Frees the cached tensors. */
  dispose(): void {
    for (const l of this.tensors) tf.dispose([l.k, l.v]);
    this.tensors = [];
  }
}
