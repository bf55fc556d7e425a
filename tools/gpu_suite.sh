#!/usr/bin/env bash
# The test suite on an NVIDIA GPU (DEV=CUDA), from a test binary built elsewhere: the machines lent
# with a GPU have CUDA's driver and NVRTC but no Boost, doctest or libLLVM (their CPU kernels go
# through cc). Each test file runs as its own process, eight at a time; every file's output goes
# into one log, and a summary line per file (and the totals) into another.
#   tools/gpu_suite.sh TEST_BINARY OUT_DIR [NAME...]    (names of tests/test_<name>.cpp; default all)
set -uo pipefail
binary=$(realpath "$1")
out=$2
shift 2
cd "$(dirname "$0")/.."
mkdir -p "$out"
# the tests read tests/data through the path they were compiled at
compiled_at=$(strings "$binary" | grep -m1 -o '/[^ ]*/tests/test_[a-z_]*\.cpp' | sed 's|/tests/test_[a-z_]*\.cpp$||')
if [ -n "$compiled_at" ] && [ ! -e "$compiled_at" ]; then
  mkdir -p "$(dirname "$compiled_at")" && ln -s "$PWD" "$compiled_at"
fi
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in tests/test_*.cpp; do names+=("$(basename "$f" .cpp | sed 's/^test_//')"); done
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/summary.txt" 2>&1
mkdir -p "$out/logs"
printf '%s\n' "${names[@]}" | xargs -P 8 -I{} sh -c \
  "DEV=CUDA timeout ${SUITE_FILE_TIMEOUT:-400} '$binary' '--source-file=*test_{}.cpp' > '$out/logs/{}.log' 2>&1; echo \$? > '$out/logs/{}.rc'"
passed=0
for n in "${names[@]}"; do
  rc=$(cat "$out/logs/$n.rc")
  line=$(grep -a 'test cases:' "$out/logs/$n.log" | tail -1)
  echo "$n: exit $rc; $line" >> "$out/summary.txt"
  [ "$rc" = 0 ] && passed=$((passed + 1))
  { echo "===== $n (exit $rc)"; cat "$out/logs/$n.log"; } >> "$out/all.log"
done
rm -rf "$out/logs"
echo "$passed of ${#names[@]} test files passed on CUDA" | tee -a "$out/summary.txt"
