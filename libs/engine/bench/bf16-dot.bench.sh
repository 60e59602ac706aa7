#!/bin/sh
# bf16 weights widened to float32 + FMA against AVX-512 BF16 dot products (see bf16-dot-bench.c), in the
# compute-bound and the batch-1 streaming regime, on this machine. Prints the table; extra arguments go to
# the program (--reps N, --threads N).
#
#   sh libs/engine/bench/bf16-dot.bench.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
native="$here/../native"
bin=$(mktemp /tmp/bf16-dot-bench.XXXXXX)
trap 'rm -f "$bin"' EXIT
${CC:-cc} -O3 -pthread "$here/bf16-dot-bench.c" "$native/skinny.c" "$native/gemm.c" "$native/thread-pool.c" "$native/machine-limits.c" -lm -o "$bin"
"$bin" "$@"
