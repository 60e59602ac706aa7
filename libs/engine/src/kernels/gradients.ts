import * as tf from '@tensorflow/tfjs-core';

/*
 * Gradients of the kernels the engine's models use.
 *
 * Why here: tfjs-core's own gradient registrations (`@tensorflow/tfjs-core/dist/register_all_gradients`)
 * ship only as extension-less ES modules, which neither Node's `require` nor its ESM loader can load
 * (ERR_MODULE_NOT_FOUND on `./gradients/Abs_grad`), and the CommonJS bundle (`tf-core.node.js`) holds
 * none of them. The union package `@tensorflow/tfjs` (which tfjs-node pulls in) registers them; when a
 * host has it, its registrations win and these are skipped. The maths matches tfjs's; every one is
 * checked against float64 finite differences in `gradients.spec.ts` and through the model's golden
 * gradients.
 */

type GradFunc = (dy: tf.Tensor, saved: tf.Tensor[], attrs: tf.NamedAttrMap) => Record<string, () => tf.Tensor>;

function reduceTo(res: tf.Tensor, shape: number[], outShape: number[]): tf.Tensor {
  const axes = tf.backend_util.getReductionAxes(shape, outShape);
  const reduced = axes.length > 0 ? tf.sum(res, axes) : res;
  return tf.reshape(reduced, shape);
}

function broadcastShape(a: tf.Tensor, b: tf.Tensor): number[] {
  return tf.backend_util.assertAndGetBroadcastShape(a.shape, b.shape);
}

function axesOf(axis: unknown, shape: number[]): number[] {
  return tf.util.parseAxisParam(axis as number | number[], shape);
}

function expandForReduction(dy: tf.Tensor, x: tf.Tensor, axes: number[]): tf.Tensor {
  const shape = x.shape.slice();
  for (const a of axes) shape[a] = 1;
  return tf.mul(tf.reshape(dy, shape), tf.ones(x.shape, 'float32'));
}

function undoPermutation(perm: number[]): number[] {
  const undo = new Array<number>(perm.length);
  perm.forEach((p, i) => (undo[p] = i));
  return undo;
}

const configs: Array<{ kernelName: string; inputsToSave?: string[]; outputsToSave?: boolean[]; saveAllInputs?: boolean; gradFunc: GradFunc }> = [
  {
    kernelName: 'Add',
    inputsToSave: ['a', 'b'],
    gradFunc: (dy, [a, b]) => {
      const out = broadcastShape(a, b);
      return { a: () => reduceTo(dy, a.shape, out), b: () => reduceTo(dy, b.shape, out) };
    },
  },
  {
    kernelName: 'Sub',
    inputsToSave: ['a', 'b'],
    gradFunc: (dy, [a, b]) => {
      const out = broadcastShape(a, b);
      return { a: () => reduceTo(dy, a.shape, out), b: () => reduceTo(tf.neg(dy), b.shape, out) };
    },
  },
  {
    kernelName: 'Multiply',
    inputsToSave: ['a', 'b'],
    gradFunc: (dy, [a, b]) => {
      const out = broadcastShape(a, b);
      return { a: () => reduceTo(tf.mul(dy, b), a.shape, out), b: () => reduceTo(tf.mul(dy, a), b.shape, out) };
    },
  },
  {
    kernelName: 'RealDiv',
    inputsToSave: ['a', 'b'],
    gradFunc: (dy, [a, b]) => {
      const out = broadcastShape(a, b);
      return {
        a: () => reduceTo(tf.div(dy, b), a.shape, out),
        b: () => reduceTo(tf.neg(tf.div(tf.mul(dy, a), tf.square(b))), b.shape, out),
      };
    },
  },
  {
    kernelName: 'AddN',
    saveAllInputs: true,
    gradFunc: (dy, saved) => Object.fromEntries(saved.map((_, i) => [String(i), () => tf.clone(dy)])),
  },
  { kernelName: 'Neg', gradFunc: (dy) => ({ x: () => tf.neg(dy) }) },
  { kernelName: 'Identity', gradFunc: (dy) => ({ x: () => tf.clone(dy) }) },
  { kernelName: 'Cast', gradFunc: (dy) => ({ x: () => tf.clone(dy) }) },
  { kernelName: 'Square', inputsToSave: ['x'], gradFunc: (dy, [x]) => ({ x: () => tf.mul(dy, tf.mul(x, 2)) }) },
  { kernelName: 'Sqrt', outputsToSave: [true], gradFunc: (dy, [y]) => ({ x: () => tf.div(dy, tf.mul(y, 2)) }) },
  {
    // d/dx x^-1/2 = -1/2 · y³ with y = x^-1/2, from the saved output (no pow kernel needed).
    kernelName: 'Rsqrt',
    outputsToSave: [true],
    gradFunc: (dy, [y]) => ({ x: () => tf.mul(dy, tf.mul(tf.mul(y, tf.square(y)), -0.5)) }),
  },
  { kernelName: 'Exp', outputsToSave: [true], gradFunc: (dy, [y]) => ({ x: () => tf.mul(dy, y) }) },
  { kernelName: 'Log', inputsToSave: ['x'], gradFunc: (dy, [x]) => ({ x: () => tf.div(dy, x) }) },
  {
    kernelName: 'Sigmoid',
    outputsToSave: [true],
    gradFunc: (dy, [y]) => ({ x: () => tf.mul(dy, tf.mul(y, tf.sub(1, y))) }),
  },
  {
    kernelName: 'Sum',
    inputsToSave: ['x'],
    gradFunc: (dy, [x], attrs) => ({ x: () => expandForReduction(dy, x, axesOf(attrs.axis, x.shape)) }),
  },
  {
    kernelName: 'Mean',
    inputsToSave: ['x'],
    gradFunc: (dy, [x], attrs) => {
      const axes = axesOf(attrs.axis, x.shape);
      const n = axes.reduce((p, a) => p * x.shape[a], 1);
      return { x: () => tf.div(expandForReduction(dy, x, axes), n) };
    },
  },
  { kernelName: 'Reshape', inputsToSave: ['x'], gradFunc: (dy, [x]) => ({ x: () => tf.reshape(dy, x.shape) }) },
  {
    kernelName: 'Transpose',
    gradFunc: (dy, _saved, attrs) => ({ x: () => tf.transpose(dy, undoPermutation(attrs.perm as number[])) }),
  },
  {
    kernelName: 'Reverse',
    gradFunc: (dy, _saved, attrs) => ({ x: () => tf.reverse(dy, axesOf(attrs.dims, dy.shape)) }),
  },
  {
    kernelName: 'Softmax',
    outputsToSave: [true],
    gradFunc: (dy, [y], attrs) => {
      const dyY = tf.mul(dy, y);
      return { logits: () => tf.sub(dyY, tf.mul(tf.sum(dyY, [attrs.dim as number], true), y)) };
    },
  },
  {
    kernelName: 'BatchMatMul',
    inputsToSave: ['a', 'b'],
    gradFunc: (dy, [a, b], attrs) => {
      const ta = attrs.transposeA as boolean;
      const tb = attrs.transposeB as boolean;
      if (!ta && !tb) return { a: () => tf.matMul(dy, b, false, true), b: () => tf.matMul(a, dy, true, false) };
      if (!ta && tb) return { a: () => tf.matMul(dy, b, false, false), b: () => tf.matMul(dy, a, true, false) };
      if (ta && !tb) return { a: () => tf.matMul(b, dy, false, true), b: () => tf.matMul(a, dy, false, false) };
      return { a: () => tf.matMul(b, dy, true, true), b: () => tf.matMul(dy, a, true, true) };
    },
  },
  {
    // Each input gets its slice of dy along the concatenation axis (rows after a shared prefix read its keys this way).
    kernelName: 'Concat',
    saveAllInputs: true,
    gradFunc: (dy, saved, attrs) => {
      const axis = axesOf(attrs.axis, saved[0].shape)[0];
      const parts = tf.split(
        dy,
        saved.map((t) => t.shape[axis]),
        axis,
      );
      return Object.fromEntries(parts.map((p, i) => [String(i), () => p]));
    },
  },
  {
    // dy seen as [r0, s0, r1, s1, …] (repetitions interleaved with the input's dims), summed over the repetitions.
    kernelName: 'Tile',
    inputsToSave: ['x'],
    gradFunc: (dy, [x], attrs) => {
      const reps = attrs.reps as number[];
      return {
        x: () => {
          const split = x.shape.flatMap((n, i) => [reps[i], n]);
          return tf.reshape(
            tf.sum(
              tf.reshape(dy, split),
              reps.map((_, i) => 2 * i),
            ),
            x.shape,
          );
        },
      };
    },
  },
  {
    // Only the form the engine uses: gather along axis 0 without batch dims (embedding rows, picked logits).
    kernelName: 'GatherV2',
    inputsToSave: ['x', 'indices'],
    gradFunc: (dy, [x, indices], attrs) => {
      const axis = axesOf(attrs.axis, x.shape)[0];
      if (axis !== 0 || (attrs.batchDims as number) !== 0) {
        throw new Error('engine gradients: GatherV2 is only differentiable along axis 0 without batch dims');
      }
      return {
        x: () => {
          const inner = x.shape.slice(1);
          const values = tf.reshape(dy, [indices.size, ...inner]);
          return tf.unsortedSegmentSum(values, tf.reshape(indices, [indices.size]) as tf.Tensor1D, x.shape[0]);
        },
        indices: () => tf.zerosLike(indices),
      };
    },
  },
];

/**
 * Registers the gradients above for kernels that have none yet (idempotent). `initBackend()` calls it.
 *
 * @example
 * ```ts
 * registerEngineGradients();
 * tf.grad((x) => tf.sum(tf.square(x)))(tf.tensor1d([1, 2])); // [2, 4]
 * ```
 */
export function registerEngineGradients(): void {
  for (const config of configs) {
    if (!tf.getGradient(config.kernelName)) tf.registerGradient(config as unknown as tf.GradConfig);
  }
}
