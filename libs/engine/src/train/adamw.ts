import * as tf from '@tensorflow/tfjs-core';
import { EngineError } from '../errors';
import { adamwKernel, nativeLayerOps } from '../kernels/native-layer-ops';

/** Hyper-parameters of {@link AdamW} (PyTorch's defaults except where noted). */
export interface AdamWOptions {
  betas?: [number, number];
  eps?: number;
  /** Decoupled weight decay (default 0.01, PyTorch's AdamW default). */
  weightDecay?: number;
  /** Which parameters decay, by Hugging Face name; default: all but norms and biases (as `transformers`' Trainer). */
  decay?: (name: string) => boolean;
}

/**
 * Hyper-parameters for one step that replace the optimizer's own for that step only (Tinker's
 * `AdamParams` arrive with every `optim_step`). Bias correction uses the step's betas, as
 * `torch.optim.AdamW` does when a param group's betas change between steps.
 */
export interface AdamWStepOptions {
  betas?: [number, number];
  eps?: number;
  weightDecay?: number;
}

/** Throws `ENGINE_INVALID_OPTIONS` naming the bad hyper-parameter. */
function checkHyper(b1: number, b2: number, eps: number, wd: number): void {
  const bad = (msg: string, field: string) => new EngineError('ENGINE_INVALID_OPTIONS', msg, field);
  if (!(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1)) throw bad(`betas must be in [0, 1), got [${b1}, ${b2}]`, 'betas');
  if (!(eps > 0 && Number.isFinite(eps))) throw bad(`eps must be a finite number > 0, got ${eps}`, 'eps');
  if (!(wd >= 0 && Number.isFinite(wd))) throw bad(`weightDecay must be a finite number >= 0, got ${wd}`, 'weightDecay');
}

/**
 * The optimizer's state as plain arrays, to checkpoint and resume a run exactly: the step count and each
 * parameter's first and second moments, by parameter name, in the layout of the parameter's variable.
 */
export interface AdamWState {
  step: number;
  moments: Map<string, { shape: number[]; m: Float32Array; v: Float32Array }>;
}

/** Default decay rule: matrices decay; RMSNorm weights and biases do not. */
export function defaultDecay(name: string): boolean {
  return !name.endsWith('.bias') && !name.includes('norm');
}

/**
 * AdamW with decoupled weight decay and bias correction, step for step as `torch.optim.AdamW`:
 * `p ← p·(1 − lr·wd)`, `m ← β1·m + (1−β1)·g`, `v ← β2·v + (1−β2)·g²`,
 * `p ← p − lr/(1−β1ᵗ) · m / (√v/√(1−β2ᵗ) + ε)`.
 * Moments live in tf variables beside the parameters; {@link AdamW.dispose} frees them.
 *
 * @example
 * ```ts
 * const opt = new AdamW(model.namedVariables(), { weightDecay: 0.1 });
 * opt.apply(gradsByName, 3e-4);
 * ```
 */
export class AdamW {
  private readonly b1: number;
  private readonly b2: number;
  private readonly eps: number;
  private readonly wd: number;
  private readonly params: Array<{ name: string; variable: tf.Variable; decay: boolean; m: tf.Variable; v: tf.Variable }>;
  private t = 0;

  constructor(params: Map<string, tf.Variable>, options: AdamWOptions = {}) {
    [this.b1, this.b2] = options.betas ?? [0.9, 0.999];
    this.eps = options.eps ?? 1e-8;
    this.wd = options.weightDecay ?? 0.01;
    checkHyper(this.b1, this.b2, this.eps, this.wd);
    const decay = options.decay ?? defaultDecay;
    this.params = [...params].map(([name, variable]) => ({
      name,
      variable,
      decay: decay(name),
      // Inside tidy: the zeros a variable is made from would otherwise stay alive after dispose().
      m: tf.tidy(() => tf.variable(tf.zerosLike(variable), false)),
      v: tf.tidy(() => tf.variable(tf.zerosLike(variable), false)),
    }));
  }

  /** Optimizer steps taken. */
  get steps(): number {
    return this.t;
  }

  /** Checks a step's hyper-parameters without applying anything (throws `ENGINE_INVALID_OPTIONS` naming the bad one). */
  checkStep(step: AdamWStepOptions): void {
    const [b1, b2] = step.betas ?? [this.b1, this.b2];
    checkHyper(b1, b2, step.eps ?? this.eps, step.weightDecay ?? this.wd);
  }

  /**
   * One update with gradients by parameter name (missing names are left unchanged, their moments too),
   * with the optimizer's hyper-parameters or, for this step, those of `step`.
   */
  apply(grads: Map<string, tf.Tensor>, lr: number, step: AdamWStepOptions = {}): void {
    if (!(lr >= 0) || !Number.isFinite(lr)) throw new EngineError('ENGINE_INVALID_OPTIONS', `learning rate must be a finite number >= 0, got ${lr}`, 'lr');
    const [b1, b2] = step.betas ?? [this.b1, this.b2];
    const eps = step.eps ?? this.eps;
    const wd = step.weightDecay ?? this.wd;
    checkHyper(b1, b2, eps, wd);
    this.t++;
    const bc1 = 1 - Math.pow(b1, this.t);
    const bc2 = 1 - Math.pow(b2, this.t);
    const stepSize = lr / bc1;
    const sqrtBc2 = Math.sqrt(bc2);
    const native = nativeLayerOps();
    tf.tidy(() => {
      for (const p of this.params) {
        const g = grads.get(p.name);
        if (!g) continue;
        if (native) {
          // One threaded pass in the addon (the same formula) instead of eleven single-threaded kernels.
          const decay = p.decay && wd > 0 ? 1 - lr * wd : 1;
          const [np, nm, nv] = adamwKernel(p.variable, p.m, p.v, g, { b1, b2, eps, decay, step: stepSize, sqrtBc2 });
          p.m.assign(nm);
          p.v.assign(nv);
          p.variable.assign(np);
          continue;
        }
        const m = tf.add(tf.mul(p.m, b1), tf.mul(g, 1 - b1));
        const v = tf.add(tf.mul(p.v, b2), tf.mul(tf.square(g), 1 - b2));
        p.m.assign(m);
        p.v.assign(v);
        const base = p.decay && wd > 0 ? tf.mul(p.variable, 1 - lr * wd) : p.variable;
        const denom = tf.add(tf.div(tf.sqrt(v), sqrtBc2), eps);
        p.variable.assign(tf.sub(base, tf.mul(tf.div(m, denom), stepSize)));
      }
    });
  }

  /** A copy of the step count and the moments (see {@link AdamW.loadState}). */
  exportState(): AdamWState {
    const moments: AdamWState['moments'] = new Map();
    for (const p of this.params) {
      moments.set(p.name, { shape: [...p.m.shape], m: Float32Array.from(p.m.dataSync() as Float32Array), v: Float32Array.from(p.v.dataSync() as Float32Array) });
    }
    return { step: this.t, moments };
  }

  /**
   * Restores a state from {@link AdamW.exportState}: the next {@link AdamW.apply} continues exactly as
   * the saved optimizer would have. Every parameter must be present with its variable's shape.
   */
  loadState(state: AdamWState): void {
    const bad = (msg: string, field: string) => new EngineError('ENGINE_INVALID_INPUT', msg, field);
    if (!Number.isInteger(state.step) || state.step < 0) throw bad(`step must be an integer >= 0, got ${state.step}`, 'step');
    for (const p of this.params) {
      const s = state.moments.get(p.name);
      if (!s) throw bad(`no moments for parameter ${p.name}`, p.name);
      const size = p.variable.size;
      if (s.shape.join(',') !== p.variable.shape.join(',') || s.m.length !== size || s.v.length !== size) {
        throw bad(`moments of ${p.name} have shape [${s.shape}], expected [${p.variable.shape}]`, p.name);
      }
    }
    for (const p of this.params) {
      const s = state.moments.get(p.name)!;
      tf.tidy(() => {
        p.m.assign(tf.tensor(s.m, p.variable.shape, 'float32'));
        p.v.assign(tf.tensor(s.v, p.variable.shape, 'float32'));
      });
    }
    this.t = state.step;
  }

  /** Frees the moment variables. */
  dispose(): void {
    for (const p of this.params) tf.dispose([p.m, p.v]);
    this.params.length = 0;
  }
}
