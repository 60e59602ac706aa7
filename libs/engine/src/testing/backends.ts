import * as tf from '@tensorflow/tfjs-core';
import { initBackend, type BackendName } from '../backend';

/** The backends every numeric spec runs on: the pure-JS reference and the fast default. */
export const TEST_BACKENDS: BackendName[] = ['cpu', 'wasm'];

/** Switches to `name` before the enclosing describe's tests (use inside `describe.each(TEST_BACKENDS)`). */
export function useBackend(name: BackendName): void {
  beforeAll(async () => {
    const info = await initBackend({ backend: name });
    if (info.name !== name || tf.getBackend() !== name) throw new Error(`backend ${name} did not start`);
  });
}

/** Largest absolute difference between two arrays of equal length (throws on a length mismatch). */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= m)) m = Number.isNaN(d) ? Infinity : d;
  }
  return m;
}
