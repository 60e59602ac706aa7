#!/bin/sh
# Benchmarks the engine's ot_gemm against OpenBLAS (see gemm-bench.c) at 1 and 2 threads, prints the
# table and writes it as JSON to bench/results/gemm-<date>.json. Extra arguments go to gemm-bench
# (e.g. --reps 11, --threads 1,2,4, --shape 1024,4864,896,NT).
#
#   sh libs/engine/bench/gemm.bench.sh
#
# Compiled like the production addon (-O3, no -march: the kernel picks its code at run time). Run it on
# a quiet machine; the load average at start and end is part of the output.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
native="$here/../native"
bin=$(mktemp /tmp/gemm-bench.XXXXXX)
trap 'rm -f "$bin"' EXIT
${CC:-cc} -O3 -pthread "$here/gemm-bench.c" "$native/gemm.c" "$native/thread-pool.c" -ldl -o "$bin"
mkdir -p "$here/results"
json="$here/results/gemm-$(date +%Y-%m-%d).json"
OMP_WAIT_POLICY=PASSIVE "$bin" --json "$json" "$@"
echo "wrote $json"
