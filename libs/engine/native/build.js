#!/usr/bin/env node
/*
 * Compiles native/blas-matmul.c into native/build/blas_matmul.node (the engine's OpenBLAS BatchMatMul
 * for the wasm backend). Optional by design: with no C compiler or no Node headers it says why and exits
 * 0, and the engine runs its XNNPACK kernel instead. Needs no OpenBLAS at build time (opened at run time).
 * Skips the compiler when the addon is newer than its source. Run by `npm run build` (root and package).
 */
'use strict';
const { execFileSync } = require('node:child_process');
const { existsSync, mkdirSync, statSync, renameSync } = require('node:fs');
const { join, dirname } = require('node:path');

const source = join(__dirname, 'blas-matmul.c');
const out = join(__dirname, 'build', 'blas_matmul.node');

function headerDirs() {
  // Node's own install (official tarballs and nodesource packages ship include/node), then Debian's.
  const prefix = dirname(dirname(process.execPath));
  return [join(prefix, 'include', 'node'), '/usr/include/node', '/usr/local/include/node'].filter((d) => existsSync(join(d, 'node_api.h')));
}

function main() {
  if (existsSync(out) && statSync(out).mtimeMs >= statSync(source).mtimeMs && !process.argv.includes('--force')) return;
  const headers = headerDirs();
  if (headers.length === 0) {
    console.warn('engine: no Node headers (node_api.h) found; the OpenBLAS kernel is not built (the engine uses XNNPACK)');
    return;
  }
  const cc = process.env.CC || 'cc';
  mkdirSync(dirname(out), { recursive: true });
  const tmp = `${out}.${process.pid}.tmp`;
  try {
    execFileSync(cc, ['-O2', '-shared', '-fPIC', '-DNODE_GYP_MODULE_NAME=blas_matmul', `-I${headers[0]}`, source, '-o', tmp, '-ldl'], { stdio: ['ignore', 'inherit', 'inherit'] });
    renameSync(tmp, out); // atomic: a process loading the addon never sees half a file
  } catch (e) {
    console.warn(`engine: could not compile the OpenBLAS kernel with ${cc} (${e.message.split('\n')[0]}); the engine uses XNNPACK`);
  }
}

main();
