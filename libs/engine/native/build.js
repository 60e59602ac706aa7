#!/usr/bin/env node
/*
 * Compiles the engine's native addon (native/*.c) into native/build/engine.node: its own matrix product,
 * tensors outside the wasm heap and the fused language-model head. Plain `cc`, Node's headers, no
 * node-gyp, no library to link beyond libc, libm and libdl (CUDA, where a host has it, is opened at run time). Optional by design: with no C compiler or no Node
 * headers it says why and exits 0, and the engine runs on tfjs's own kernels with every tensor in the
 * wasm heap (and says so when it starts). Skips the compiler when the addon is newer than its sources.
 * Run by `npm run build` (root and package).
 */
'use strict';
const { execFileSync } = require('node:child_process');
const { existsSync, mkdirSync, statSync, renameSync, readdirSync } = require('node:fs');
const { join, dirname } = require('node:path');

const SOURCES = ['addon.c', 'cuda.c', 'decode.c', 'gemm.c', 'layer-ops.c', 'machine-limits.c', 'skinny.c', 'thread-pool.c', 'tensors.c', 'token-scores.c'].map((f) =>
  join(__dirname, f),
);
const out = join(__dirname, 'build', 'engine.node');

function headerDirs() {
  // Node's own install (official tarballs and nodesource packages ship include/node), then Debian's.
  const prefix = dirname(dirname(process.execPath));
  return [join(prefix, 'include', 'node'), '/usr/include/node', '/usr/local/include/node'].filter((d) => existsSync(join(d, 'node_api.h')));
}

/** Newest modification time of the sources and the headers beside them. */
function newestSource() {
  const files = [
    ...SOURCES,
    ...readdirSync(__dirname)
      .filter((f) => f.endsWith('.h'))
      .map((f) => join(__dirname, f)),
  ];
  return Math.max(...files.map((f) => statSync(f).mtimeMs));
}

function main() {
  if (existsSync(out) && statSync(out).mtimeMs >= newestSource() && !process.argv.includes('--force')) return;
  const headers = headerDirs();
  if (headers.length === 0) {
    console.warn('engine: no Node headers (node_api.h) found; the native addon is not built (the engine runs on tfjs kernels only)');
    return;
  }
  const cc = process.env.CC || 'cc';
  mkdirSync(dirname(out), { recursive: true });
  const tmp = `${out}.${process.pid}.tmp`;
  // No -march: gemm.c compiles its AVX-512 and AVX2 kernels with target attributes and picks one at run time.
  const args = ['-O3', '-shared', '-fPIC', '-pthread', '-DNODE_GYP_MODULE_NAME=engine', `-I${headers[0]}`, `-I${__dirname}`, ...SOURCES, '-o', tmp, '-lm', '-ldl'];
  try {
    execFileSync(cc, args, { stdio: ['ignore', 'inherit', 'inherit'] });
    renameSync(tmp, out); // atomic: a process loading the addon never sees half a file
  } catch (e) {
    console.warn(`engine: could not compile the native addon with ${cc} (${e.message.split('\n')[0]}); the engine runs on tfjs kernels only`);
  }
}

main();
