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
  // Per block: the rows' hidden states, mask and targets, and their adapted logits' log-softmax.
  const block = (hh: tf.Tensor2D, A: tf.Tensor2D, B: tf.Tensor2D, start: number, end: number) => {
    const hc = tf.slice(hh, [start, 0], [end - start, -1]);
    const mask = f.mask && tf.slice(f.mask, [start, 0], [end - start, -1]);
    const u = lowRank(hc, A, mask);
    const logp = tf.logSoftmax(tf.add(baseLogits(hc, head), tf.matMul(u, B)));
    // An int32 one-hot cast to float32: tfjs-wasm's float32 OneHot writes the integer's bits.
    const onehot = tf.cast(tf.oneHot(tf.tensor1d(targets.subarray(start, end), 'int32'), vocab), 'float32');
    return { hc, mask, u, logp, onehot };
  };
  const op = tf.customGrad(((...args: [tf.Tensor, tf.Tensor, tf.Tensor, tf.GradSaveFunc]) => {
    const [hh, A, B] = args.slice(0, 3) as tf.Tensor2D[];
    const save = args[3];
    save([hh, A, B]);
    const value = tf.tidy(() => {
      const parts = blocks.map(([start, end]) => {
        const { logp, onehot } = block(hh, A, B, start, end);
        const lp = tf.sum(tf.mul(logp, onehot), 1);
        const ent = entropy ? tf.neg(tf.sum(tf.mul(tf.exp(logp), logp), 1)) : tf.zerosLike(lp);
        return tf.stack([lp, ent], 1);
      });
      return n === 0 ? tf.zeros([0, 2]) : tf.concat(parts, 0);
    });
    return {
      value,
      gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => {
        const [hs, As, Bs] = saved as tf.Tensor2D[];
        const d = Array.isArray(dy) ? dy[0] : dy;
        let dA: tf.Tensor = tf.zerosLike(As);
        let dB: tf.Tensor = tf.zerosLike(Bs);
        const dh: tf.Tensor[] = [];
        for (const [start, end] of blocks) {
          const [dhc, dAc, dBc] = tf.tidy(() => {
            const { hc, mask, u, logp, onehot } = block(hs, As, Bs, start, end);
            const dc = tf.slice(d, [start, 0], [end - start, 2]);
            const dlogp = tf.slice(dc, [0, 0], [-1, 1]);
            const p = tf.exp(logp);
            // d logp[target] / d logits = onehot − p;  d H / d logits = −p ⊙ (logp + H).
            let dlogits = tf.mul(dlogp, tf.sub(onehot, p));
            if (entropy) {
              const dent = tf.slice(dc, [0, 1], [-1, 1]);
              const H = tf.neg(tf.sum(tf.mul(p, logp), 1, true));
              dlogits = tf.sub(dlogits, tf.mul(dent, tf.mul(p, tf.add(logp, H))));
            }
            const dl = dlogits as tf.Tensor2D;
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
