import * as tf from '@tensorflow/tfjs-core';
import { TEST_BACKENDS, maxAbsDiff, useBackend } from '../testing/backends';
import { AdamW, defaultDecay } from './adamw';

/** torch.optim.AdamW's update in float64, step by step. */
function referenceAdamW(p0: number[], grads: number[][], lrs: number[], o: { b1: number; b2: number; eps: number; wd: number }): number[] {
  const p = [...p0];
  const m = p.map(() => 0);
  const v = p.map(() => 0);
  grads.forEach((g, k) => {
    const t = k + 1;
    const lr = lrs[k];
    for (let i = 0; i < p.length; i++) {
      p[i] *= 1 - lr * o.wd;
      m[i] = o.b1 * m[i] + (1 - o.b1) * g[i];
      v[i] = o.b2 * v[i] + (1 - o.b2) * g[i] * g[i];
      const denom = Math.sqrt(v[i]) / Math.sqrt(1 - Math.pow(o.b2, t)) + o.eps;
      p[i] -= (lr / (1 - Math.pow(o.b1, t))) * (m[i] / denom);
    }
  });
  return p;
}

describe.each(TEST_BACKENDS)('AdamW on %s', (backend) => {
  useBackend(backend);

  it('follows torch.optim.AdamW over several steps, with decay only where the rule says', () => {
    const p0 = [0.5, -1.25, 2, 0.01];
    const grads = [
      [0.1, -0.2, 0.3, 0.0],
      [-0.4, 0.05, 0.2, 1.0],
      [0.3, 0.3, -0.1, -0.5],
    ];
    const lrs = [0.01, 0.02, 0.005];
    const o = { b1: 0.8, b2: 0.95, eps: 1e-6, wd: 0.1 };
    const w = tf.variable(tf.tensor1d(p0), true, 'adamw-w');
    const n = tf.variable(tf.tensor1d(p0), true, 'adamw-n');
    const opt = new AdamW(
      new Map([
        ['model.layers.0.mlp.up_proj.weight', w],
        ['model.layers.0.input_layernorm.weight', n],
      ]),
      { betas: [o.b1, o.b2], eps: o.eps, weightDecay: o.wd },
    );
    grads.forEach((g, k) => {
      const gt = tf.tensor1d(g);
      opt.apply(
        new Map([
          ['model.layers.0.mlp.up_proj.weight', gt],
          ['model.layers.0.input_layernorm.weight', gt],
        ]),
        lrs[k],
      );
      gt.dispose();
    });
    expect(opt.steps).toBe(3);
    expect(maxAbsDiff(w.dataSync(), referenceAdamW(p0, grads, lrs, o))).toBeLessThan(1e-6);
    expect(maxAbsDiff(n.dataSync(), referenceAdamW(p0, grads, lrs, { ...o, wd: 0 }))).toBeLessThan(1e-6);
    opt.dispose();
    tf.dispose([w, n]);
  });

  it('frees everything it made on dispose', () => {
    const w = tf.variable(tf.ones([3, 2]));
    const before = tf.memory().numTensors;
    const opt = new AdamW(new Map([['w', w]]), {});
    const g = tf.onesLike(w);
    opt.apply(new Map([['w', g]]), 0.1);
    g.dispose();
    opt.dispose();
    expect(tf.memory().numTensors).toBe(before);
    w.dispose();
  });

  it('exports its state and a fresh optimizer loaded with it continues exactly (checkpoint and resume)', () => {
    const grads = [
      [0.1, -0.2, 0.3, 0.0],
      [-0.4, 0.05, 0.2, 1.0],
      [0.3, 0.3, -0.1, -0.5],
    ];
    const run = (w: tf.Variable, opt: AdamW, gs: number[][]) =>
      gs.forEach((g) => {
        const gt = tf.tensor2d(g, [2, 2]);
        opt.apply(new Map([['w', gt]]), 0.01);
        gt.dispose();
      });
    const a = tf.variable(tf.tensor2d([0.5, -1.25, 2, 0.01], [2, 2]));
    const optA = new AdamW(new Map([['w', a]]), { weightDecay: 0.1 });
    run(a, optA, grads);

    const b = tf.variable(tf.tensor2d([0.5, -1.25, 2, 0.01], [2, 2]));
    const optB = new AdamW(new Map([['w', b]]), { weightDecay: 0.1 });
    run(b, optB, grads.slice(0, 2));
    const saved = optB.exportState();
    expect(saved.step).toBe(2);
    expect(saved.moments.get('w')!.shape).toEqual([2, 2]);
    const c = tf.variable(b.clone());
    const optC = new AdamW(new Map([['w', c]]), { weightDecay: 0.1 });
    optC.loadState(saved);
    expect(optC.steps).toBe(2);
    run(c, optC, grads.slice(2));
    expect(Array.from(c.dataSync())).toEqual(Array.from(a.dataSync()));

    expect(() => optC.loadState({ step: 1, moments: new Map() })).toThrow(/no moments for parameter w/);
    expect(() => optC.loadState({ step: 1, moments: new Map([['w', { shape: [4], m: new Float32Array(4), v: new Float32Array(4) }]]) })).toThrow(/shape/);
    [optA, optB, optC].forEach((o) => o.dispose());
    tf.dispose([a, b, c]);
  });

  it('decays matrices but not norms or biases by default', () => {
    expect(defaultDecay('model.embed_tokens.weight')).toBe(true);
    expect(defaultDecay('model.layers.3.self_attn.q_proj.weight')).toBe(true);
    expect(defaultDecay('model.layers.3.self_attn.q_proj.bias')).toBe(false);
    expect(defaultDecay('model.layers.3.post_attention_layernorm.weight')).toBe(false);
    expect(defaultDecay('model.norm.weight')).toBe(false);
  });
});
