import * as tf from '@tensorflow/tfjs-core';
import { nativeMatMul } from '../kernels/native-matmul';
import { NativeTensor } from '../native/native-tensor';

/*
 * The output projection under an unembedding LoRA (`lm_head` target): logits `h·Wᵀ + ((h·A) ⊙ mask)·B`
 * with the base head W `[vocab, hidden]` frozen (native or a tensor), A `[hidden, R]`, B `[R, vocab]`
 * (the adapter's scaling folded into B) and an optional per-row mask `[n, R]` when rows use different
 * adapters.
 *
 * The fused native head cannot add a low-rank term, so next-token log-probs and entropies are computed
 * here a block of rows at a time with the logits materialised per block only (a few MiB, never
 * `[tokens, vocab]`), and the gradient recomputes each block: like the fused head, the pass keeps nothing
 * of the vocabulary's size.
 */

/** The factors an unembedding LoRA adds to the head. */
export interface LoraHeadFactors {
  A: tf.Tensor2D;
  /** `[R, vocab]`, scaling included. */
  B: tf.Tensor2D;
  /** `[n, R]` 0/1: which columns of A·B apply to each row; absent = all. */
  mask?: tf.Tensor2D;
}

/** Floats of one block of logits: 16 MiB a temporary, a handful alive at once. */
const BLOCK_FLOATS = 4 * 1024 * 1024;

function baseLogits(h: tf.Tensor2D, head: NativeTensor | tf.Tensor2D): tf.Tensor2D {
  return (head instanceof NativeTensor ? nativeMatMul(h, head) : tf.matMul(h, head, false, true)) as tf.Tensor2D;
}

/** `dlogits · W` (`[rows, hidden]`). */
function baseBackward(dlogits: tf.Tensor2D, head: NativeTensor | tf.Tensor2D): tf.Tensor2D {
  return (head instanceof NativeTensor ? nativeMatMul(dlogits, head, false) : tf.matMul(dlogits, head)) as tf.Tensor2D;
}

function lowRank(h: tf.Tensor2D, A: tf.Tensor2D, mask: tf.Tensor2D | undefined): tf.Tensor2D {
  const u = tf.matMul(h, A) as tf.Tensor2D;
  return mask ? tf.mul(u, mask) : u;
}

/**
 * Logits `[n, vocab]` of final hidden states under the adapted head (for sampling, where only the last
 * positions' logits are needed). The caller owns the tensor (use inside `tf.tidy`).
 */
export function loraHeadLogits(h: tf.Tensor2D, head: NativeTensor | tf.Tensor2D, f: LoraHeadFactors): tf.Tensor2D {
  return tf.add(baseLogits(h, head), tf.matMul(lowRank(h, f.A, f.mask), f.B)) as tf.Tensor2D;
}

/**
 * Log-prob of `targets[i]` and (with `entropy`) the entropy of row i's distribution under the adapted
 * head, differentiable in `h`, `A` and `B`. Must be called inside `tf.tidy` (or a gradient tape).
 */
export function loraHeadScores(
  h: tf.Tensor2D,
  head: NativeTensor | tf.Tensor2D,
  f: LoraHeadFactors,
  targets: Int32Array,
  entropy: boolean,
): { logProbs: tf.Tensor1D; entropy: tf.Tensor1D } {
  const n = h.shape[0];
  const vocab = head.shape[0];
  const rows = Math.max(1, Math.floor(BLOCK_FLOATS / vocab));
  const blocks: Array<[number, number]> = [];
  for (let start = 0; start < n; start += rows) blocks.push([start, Math.min(n, start + rows)]);
  // The forward pass keeps each row's log-sum-exp and entropy for the backward one.
  const lse = new Float32Array(n);
  const ent = new Float32Array(n);
  // Per block: the rows' hidden states, mask and low-rank activations, and their adapted logits.
  const block = (hh: tf.Tensor2D, A: tf.Tensor2D, B: tf.Tensor2D, start: number, end: number) => {
    const hc = tf.slice(hh, [start, 0], [end - start, -1]);
    const mask = f.mask && tf.slice(f.mask, [start, 0], [end - start, -1]);
    const u = lowRank(hc, A, mask);
    const z = tf.add(baseLogits(hc, head), tf.matMul(u, B)) as tf.Tensor2D;
    return { hc, mask, u, z };
  };
  // Flat indices of each row's target in a block's `[rows, vocab]` logits.
  const targetIndex = (start: number, end: number) =>
    tf.tensor1d(
      Int32Array.from(targets.subarray(start, end), (t, i) => i * vocab + t),
      'int32',
    );
  const op = tf.customGrad(((...args: [tf.Tensor, tf.Tensor, tf.Tensor, tf.GradSaveFunc]) => {
    const [hh, A, B] = args.slice(0, 3) as tf.Tensor2D[];
    const save = args[3];
    save([hh, A, B]);
    const lp = new Float32Array(n);
    for (const [start, end] of blocks) {
      tf.tidy(() => {
        const { z } = block(hh, A, B, start, end);
        const m = tf.max(z, 1, true);
        const e = tf.exp(tf.sub(z, m));
        const sum = tf.sum(e, 1, true);
        const rowLse = tf.add(m, tf.log(sum));
        lse.set(rowLse.dataSync() as Float32Array, start);
        const zt = tf.gather(tf.reshape(z, [-1]), targetIndex(start, end)).dataSync() as Float32Array;
        for (let i = start; i < end; i++) lp[i] = zt[i - start] - lse[i];
        // H = lse − E_p[z].
        if (entropy) ent.set(tf.sub(tf.reshape(rowLse, [-1]), tf.div(tf.sum(tf.mul(e, z), 1), tf.reshape(sum, [-1]))).dataSync() as Float32Array, start);
      });
    }
    const value = tf.tensor2d(
      Float32Array.from({ length: 2 * n }, (_, k) => (k % 2 === 0 ? lp[k >> 1] : ent[k >> 1])),
      [n, 2],
    );
    return {
      value,
      gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => {
        const [hs, As, Bs] = saved as tf.Tensor2D[];
        const d = (Array.isArray(dy) ? dy[0] : dy).dataSync() as Float32Array;
        const dlogp = Float32Array.from({ length: n }, (_, i) => d[2 * i]);
        const dent = Float32Array.from({ length: n }, (_, i) => d[2 * i + 1]);
        const withEntropy = entropy && dent.some((x) => x !== 0);
        let dA: tf.Tensor = tf.zerosLike(As);
        let dB: tf.Tensor = tf.zerosLike(Bs);
        const dh: tf.Tensor[] = [];
        for (const [start, end] of blocks) {
          const [dhc, dAc, dBc] = tf.tidy(() => {
            const { hc, mask, u, z } = block(hs, As, Bs, start, end);
            const c = end - start;
            const col = (a: Float32Array) => tf.tensor2d(a.subarray(start, end), [c, 1]);
            const zc = tf.sub(z, col(lse));
            const p = tf.exp(zc);
            // d logp[target] / dz = onehot − p;  d H / dz = −p ⊙ (z − lse + H).
            const g = withEntropy ? tf.add(col(dlogp), tf.mul(col(dent), tf.add(zc, col(ent)))) : col(dlogp);
            const onehot = tf.scatterND(
              tf.tensor2d(
                Int32Array.from({ length: 2 * c }, (_, k) => (k % 2 === 0 ? k >> 1 : targets[start + (k >> 1)])),
                [c, 2],
                'int32',
              ),
              dlogp.subarray(start, end),
              [c, vocab],
            );
            const dl = tf.sub(onehot, tf.mul(p, g)) as tf.Tensor2D;
            let du = tf.matMul(dl, Bs, false, true) as tf.Tensor2D;
            if (mask) du = tf.mul(du, mask);
            return [tf.add(baseBackward(dl, head), tf.matMul(du, As, false, true)), tf.matMul(hc, du, true, false), tf.matMul(u, dl, true, false)];
          });
          dh.push(dhc);
          const [a, b] = [tf.add(dA, dAc), tf.add(dB, dBc)];
          tf.dispose([dA, dB, dAc, dBc]);
          [dA, dB] = [a, b];
        }
        const dhAll = n === 0 ? tf.zerosLike(hs) : tf.concat(dh, 0);
        tf.dispose(dh);
        return [dhAll, dA, dB];
      },
    };
  }) as unknown as Parameters<typeof tf.customGrad>[0]);
  const both = op(h, f.A, f.B) as tf.Tensor2D;
  // The two columns apart, by products (whose gradient the engine registers; Slice's it does not).
  const column = (j: number) => tf.reshape(tf.matMul(both, tf.tensor2d(j === 0 ? [1, 0] : [0, 1], [2, 1])), [n]) as tf.Tensor1D;
  return { logProbs: column(0), entropy: column(1) };
}
