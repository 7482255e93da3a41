#!/usr/bin/env bash
# The FP8 and decode GPU round in one go, for a device with minutes to spare (issues 56-58):
# the [gpu][fp8] tests, the quick FP8 compare (configs/fp8_small.toml), decode against the pick
# at 1x and 16x4096x4096, then an FP8 tune of 4096^3 exported and run from PyTorch beside
# torch._scaled_mm. Outputs and the store go to $OUT (else /tmp/out).
#   tools/gpu_fp8_round.sh [BUILD_DIR]      (default: carry/build when packed, else build)
set -u
cd "$(dirname "$0")/.."
. tools/gpu_env.sh "${1:-}"
O=${OUT:-/tmp/out}; mkdir -p "$O"
export GEMMTUNE_DB=$O/fp8_round.db GEMMTUNE_CACHE_DIR=/tmp/gemmtune-fp8-round PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
echo "== [gpu][fp8] tests"
timeout 150 "$build/tests/gemmtune_tests" "[gpu][fp8]" --durations yes > "$O/tests.log" 2>&1; echo "rc=$?"
grep -E "FAILED|All tests|test cases|assertions|^[0-9.]+ s:" "$O/tests.log" | tail -20
echo "== compare configs/fp8_small.toml"
timeout 300 "$gt" compare --config configs/fp8_small.toml --rounds 3 > "$O/compare.log" 2>&1; echo "rc=$?"
grep -vE "^\s{10,}" "$O/compare.log" | tail -60
echo "== decode"
for s in 1x4096x4096 16x4096x4096; do
  timeout 60 "$gt" compare --shape $s --dtype bf16 --layout nt --family decode --budget 30 --rounds 3 2>&1 |
    grep -vE "^\s{10,}" | tail -6
done
echo "== FP8 table and scaled_mm"
for sc in tensor row; do
  timeout 90 "$gt" --quiet tune --shape 4096x4096x4096 --dtype e4m3 --scale $sc --family wgmma_tma --family cublaslt \
    --budget 12 > /dev/null 2>&1
done
"$gt" export -o "$O/fp8_table.toml" 2>&1 | tail -2
GEMMTUNE_LIBRARY=$build/libgemmtune_runtime.so PYTHONPATH=python timeout 60 python3 tools/bench_scaled_mm.py "$O/fp8_table.toml" 2>&1 | tail -6
