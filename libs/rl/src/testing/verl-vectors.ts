/**
 * Test helpers (not part of the build): loading the reference vectors produced by running verl's own code
 * (`libs/rl/fixtures/verl/*.json`, see the README there) and turning their nested lists into the flat
 * row-major arrays this package takes.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Tol } from './golden';

const here = dirname(fileURLToPath(import.meta.url));

/** The verl commit the fixtures were produced at (and the package follows). */
export const FIXTURE_VERL_COMMIT = 'b178a3cd56f58b2d502255daba591e92833930a7';

/** The fixture files and how many vectors each holds. */
export const FIXTURE_FILES = {
  'advantages.json': 140,
  'policy_losses.json': 67,
  'agg_loss.json': 74,
  'kl_penalty.json': 21,
  'value_loss.json': 8,
  'entropy.json': 10,
  'utils.json': 5,
} as const;

export type FixtureFile = keyof typeof FIXTURE_FILES;

/** One vector: verl's Python path, its keyword arguments (verl's names) and what it returned. */
export interface VerlVector {
  id: string;
  function: string;
  registry_name?: string | null;
  args: Record<string, any>;
  outputs: Record<string, any>;
  grad?: Record<string, any> | null;
  mask_kind?: string;
  case?: string;
  notes?: string;
}

export interface VerlFixture {
  meta: { verl_commit: string; [key: string]: unknown };
  count: number;
  vectors: VerlVector[];
}

/** Reads one fixture file. */
export function loadVerlFixture(file: FixtureFile): VerlFixture {
  return JSON.parse(readFileSync(join(here, '..', '..', 'fixtures', 'verl', file), 'utf8')) as VerlFixture;
}

/** The vectors of a file as `[id, vector]` pairs for `test.each`. */
export function vectorCases(fixture: VerlFixture): Array<[string, VerlVector]> {
  return fixture.vectors.map((v) => [v.id, v]);
}

const scalar = (x: unknown): number => {
  if (typeof x === 'number') return x;
  if (x === 'NaN') return NaN;
  if (x === 'Infinity') return Infinity;
  if (x === '-Infinity') return -Infinity;
  throw new Error(`not a number: ${JSON.stringify(x)}`);
};

/** A nested list of numbers (a tensor) as a flat row-major Float64Array and its shape. */
export function tensor(x: unknown): { data: Float64Array; shape: number[] } {
  const shape: number[] = [];
  let probe: unknown = x;
  while (Array.isArray(probe)) {
    shape.push(probe.length);
    probe = probe[0];
  }
  const out: number[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) for (const e of v) walk(e);
    else out.push(scalar(v));
  };
  walk(x);
  return { data: Float64Array.from(out), shape };
}

/** A `[batch, seqLen]` tensor: flat data plus the shape as `{ batch, seqLen }`. */
export function matrix(x: unknown): { data: Float64Array; batch: number; seqLen: number } {
  const { data, shape } = tensor(x);
  if (shape.length !== 2) throw new Error(`expected a matrix, got shape [${shape.join(', ')}]`);
  return { data, batch: shape[0], seqLen: shape[1] };
}

/** A number, or the flat data of a tensor. */
export function num(x: unknown): number {
  return scalar(x);
}

/** verl's config dicts without the generator's `_type` tags (nested too) and with `null` dropped. */
export function plainConfig<T = Record<string, unknown>>(x: unknown): T {
  if (x === null || typeof x !== 'object' || Array.isArray(x)) return x as T;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(x)) {
    if (k === '_type' || v === null) continue;
    out[k] = plainConfig(v);
  }
  return out as T;
}

/** The README's tolerance for every vector: 1e-9 relative, 1e-10 absolute. */
export const VERL_TOL: Tol = { rtol: 1e-9, atol: 1e-10 };
/**
 * `grpo_vectorized` keeps its group statistics in float32; the README allows ~2e-6. This package emulates
 * the float32 steps, so it stays far below that (the spec reports the largest error with RL_REPORT_ERRORS=1).
 */
export const GRPO_VECTORIZED_TOL: Tol = { rtol: 2e-6, atol: 2e-6 };
