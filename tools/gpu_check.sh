#!/usr/bin/env bash
# Issue 32's checks on a lent NVIDIA machine, in one call: the test suite on DEV=CUDA, the chosen
# opts and times of the benchmarks' kernels, and benchmarks/vs_torch --device CUDA. The machines
# lent have CUDA's driver, NVRTC and PyTorch but no Boost, doctest or libLLVM, so the programs are
# built here (tinyt_tests and the bench_* programs, stripped, in BIN_DIR) and travel with the tree.
#   tools/gpu_check.sh BIN_DIR OUT_DIR [STEP...]     (steps: suite kernels bench; default all)
# OUT_DIR gets nvidia-smi.txt, suite/{summary.txt,all.log}, kernels.txt, vs_torch.{md,log}.
set -uo pipefail
bin=$(realpath "$1")
out=$(realpath -m "$2")
shift 2
steps=${*:-suite kernels bench}
cd "$(dirname "$0")/.."
mkdir -p "$out"
# the programs read tests/data through the path they were compiled at
compiled_at=$(strings "$bin/bench_llm_decode" | grep -m1 -o '/[^ ]*/tests/data' | sed 's|/tests/data$||')
if [ -n "$compiled_at" ] && [ ! -e "$compiled_at" ]; then
  mkdir -p "$(dirname "$compiled_at")" && ln -s "$PWD" "$compiled_at"
fi
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
export TINYT_CACHE_DIR=${TINYT_CACHE_DIR:-/tmp/tinyt_cache}
for step in $steps; do
  echo "== $step ($(date +%T))"
  case $step in
    suite)  # each test file a process, eight at a time (tools/gpu_suite.sh)
      SUITE_FILE_TIMEOUT=${SUITE_FILE_TIMEOUT:-150} tools/gpu_suite.sh "$bin/tinyt_tests" "$out/suite"
      tail -1 "$out/suite/summary.txt" ;;
    kernels)  # what the heuristic chose for each benchmark's kernels, and their times
      for args in "matmul fp16 4096" "matmul bf16 4096" "matmul 4096" "softmax" "conv2d fp16" "sum"; do
        set -- $args
        echo "===== bench_$*" >> "$out/kernels.txt"
        DEV=CUDA DEBUG=3 timeout 120 "$bin/bench_$1" "${@:2}" --reps 3 >> "$out/kernels.txt" 2>&1
        echo "exit $?" >> "$out/kernels.txt"
      done
      grep -a "RESULT\|opts:\|exit\|=====" "$out/kernels.txt" | sort -u | head -60 ;;
    bench)  # tinyt and torch on this card, alternated
      PYTHONUNBUFFERED=1 python3 benchmarks/vs_torch --device CUDA --skip-build --bin "$bin" \
        --no-install --rounds "${ROUNDS:-1}" --timeout "${BENCH_TIMEOUT:-150}" ${ONLY:+--only "$ONLY"} \
        --output "$out/vs_torch.md" > "$out/vs_torch.log" 2>&1
      echo "vs_torch exit $?"
      sed -n '/## Results/,$p' "$out/vs_torch.md" ;;
  esac
done
