import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// The addon's matrix product below its bindings: native/test/gemm-test.c checks every microkernel this
// CPU runs (AVX-512, AVX2, portable) × transposes × f32/bf16/f16 weights × 1-3 threads × shapes, strides
// and alpha/beta against a double-precision reference (its quick shape set here; the full set is the
// same program without `quick`). Compiled as the addon is; skipped where there is no C compiler.
const native = join(process.cwd(), 'libs', 'engine', 'native');
const cc = process.env.CC || 'cc';
const haveCc = spawnSync(cc, ['--version']).status === 0;

(haveCc ? describe : describe.skip)('native gemm against a float64 reference (gemm-test.c)', () => {
  it('passes every case on every microkernel this CPU runs', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gemm-test-'));
    try {
      const bin = join(dir, 'gemm-test');
      execFileSync(cc, ['-O3', '-pthread', join(native, 'test', 'gemm-test.c'), join(native, 'gemm.c'), join(native, 'thread-pool.c'), '-lm', '-o', bin]);
      const run = spawnSync(bin, ['quick'], { encoding: 'utf8' });
      expect(run.stdout).toMatch(/ 0 failed/);
      expect(run.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});

// The decoding step's few-row products (native/skinny.c), against the same kind of reference: f32/bf16/f16
// weights, 1-21 rows, k around the 32-value chunks and the k blocks, ranges starting and ending mid-tile.
(haveCc ? describe : describe.skip)('native skinny products against a float64 reference (skinny-test.c)', () => {
  it('passes every case on every kernel this CPU runs', () => {
    const dir = mkdtempSync(join(tmpdir(), 'skinny-test-'));
    try {
      const bin = join(dir, 'skinny-test');
      const sources = ['skinny.c', 'gemm.c', 'thread-pool.c'].map((f) => join(native, f));
      execFileSync(cc, ['-O3', '-pthread', join(native, 'test', 'skinny-test.c'), ...sources, '-lm', '-o', bin]);
      const run = spawnSync(bin, [], { encoding: 'utf8' });
      expect(run.stdout).toMatch(/ 0 failures/);
      expect(run.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
