#!/usr/bin/env bash
# The whole GPU check, from a build carried to the GPU machine (tools/pack_for_gpu.sh):
# every [gpu] test, `gemmtune devices`, a verified `gemmtune run` of the naive family, a
# smoke tune with its exported table (and TunableOp file) run through the runtime example, the
# Python package's GPU tests (where python3 has pytest), `gemmtune roofs` and a
# `compare` of the smoke tune's store, and the benchmarks
# (bench_* binaries, bench_floor on two shapes; bench_lookup.py on three held-out and three new shapes of the committed
# table; bench_trust.py, bench_tune.py and bench_scale.py; PyTorch for one table
# of bench_trust; bench_scale only on a host with two GPUs or more).
# The out-of-tree consumer of the install test, where tools/pack_for_gpu.sh carried it, runs its
# GEMM and checks it against float64; tools/bench_torch.py times gemmtune.torch.matmul beside
# torch.matmul on the committed table's shapes and ten it does not hold.
# Logs go to LOG_DIR (one file per step, and summary.txt).
#   tools/check_gpu.sh LOG_DIR [BUILD_DIR]       (BUILD_DIR default: carry/build, else build)
# CHECK_STEPS=REGEX runs only the steps whose name matches (e.g. '^(devices|gpu_tests)$', to
# split the check over calls shorter than the whole; the smoke steps after tune_smoke use its
# store and table).
# Exit status: the number of failed steps (0: all passed).
set -uo pipefail
log=${1:?usage: tools/check_gpu.sh LOG_DIR [BUILD_DIR]}
. "$(dirname "$0")/gpu_env.sh" "${2:-}"
mkdir -p "$log"
export GEMMTUNE_SOURCE_DIR=$root
work=$(mktemp -d)
export GEMMTUNE_DB=$work/results.db GEMMTUNE_CACHE_DIR=$work/cache
failed=0
summary=$log/summary.txt
: > "$summary"
# The build's source, as tools/pack_for_gpu.sh recorded it.
[ -f "$build/BUILD_INFO" ] && sed 's/^/build: /' "$build/BUILD_INFO" | tee -a "$summary"
# Each step runs under a time limit (CHECK_STEP_TIMEOUT seconds, default 570: under the device
# tool's 10 minutes a call), so that a hung kernel costs one step (rc 124), not the whole call.
step() {  # step NAME COMMAND...
  local name=$1; shift
  [[ $name =~ ${CHECK_STEPS:-.} ]] || return 0
  local t0=$(date +%s%N)
  timeout --kill-after=10 "${CHECK_STEP_TIMEOUT:-570}" "$@" > "$log/$name.log" 2>&1
  local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '%-28s rc=%-3s %5d.%01d s\n' "$name" "$rc" $((ms / 1000)) $(((ms % 1000) / 100)) | tee -a "$summary"
  [ $rc -ne 0 ] && failed=$((failed + 1))
  return 0
}
step devices        "$gt" devices
# The newest cluster shape alone first, with a short limit: a multicast or barrier mistake hangs
# rather than fails, and should not take the [gpu] tests' time with it.
step wgmma_2x2      timeout 60 "$gt" run --family wgmma_tma --shape 2048x2048x2048 --dtype bf16 \
                    --params bm=128,bn=256,stages=4,cluster=2x2
step gpu_tests      "$build/tests/gemmtune_tests" "[gpu]" --durations yes
step run_naive      "$gt" run --family naive --shape 4096x4096x4096 --dtype f32
step tune_smoke     "$gt" tune --shape 1024x1024x1024 --dtype f16 --family naive --family cublaslt --budget 12
step export_smoke   "$gt" export -o "$work/smoke.json"
# The smoke tune's cuBLASLt winner as a TunableOp file (the version only fills its validator).
step export_tunableop "$gt" export --format tunableop --torch-version 2.15.0 -o "$work/tunableop_results0.csv"
# The Python package's GPU tests on the build's library, where the interpreter has pytest.
step python_gpu bash -c 'python3 -c "import pytest" 2>/dev/null || { echo "skipped: python3 has no pytest"; exit 0; }
                         GEMMTUNE_LIBRARY="$1/libgemmtune_runtime.so" GEMMTUNE_CLI="$2" PYTHONPATH="$3/python" \
                         PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -p no:cacheprovider -rsx -q "$3/python/tests" -m gpu' \
                    _ "$build" "$gt" "$root"
step roofs          "$gt" roofs --seconds 0.3 --candidates 2
# compare on the smoke tune's store: its rows must carry % of the roofline just measured.
step compare_smoke  bash -c 'out=$("$1" compare --shape 1024x1024x1024 --dtype f16 --family naive --no-tune --rounds 3) ||
                             exit; printf "%s\n" "$out"; grep -q "roofline here: .*compute-bound" <<< "$out"' _ "$gt"
step example_runtime "$build/tools/example_runtime" --table "$work/smoke.json" --shape 1024x1024x1024 --dtype f16
step example_nearest "$build/tools/example_runtime" --table "$work/smoke.json" --shape 1000x1000x1000 --dtype f16
for b in "$build"/tools/bench_*; do
  [ -x "$b" ] || continue
  # bench_search replays recordings on the CPU (minutes, same result anywhere): run it off the GPU.
  [ "$(basename "$b")" = bench_search ] && continue
  if [ "$(basename "$b")" = bench_floor ]; then
    # Its default is the whole LLM job (minutes): two decode shapes and a smaller roof shape here.
    printf '[[problems]]\nm = [1, 16]\nn = [4096]\nk = [4096]\ndtypes = ["bf16"]\n' > "$work/floor.toml"
    step bench_floor "$b" --config "$work/floor.toml" --roof-shape 4096x4096x4096
    continue
  fi
  step "$(basename "$b")" "$b"
done
# The table's answer against tuning, leave-one-out on the committed H200 table (ten shapes), and
# three shapes it was not tuned at (prefill, and misaligned).
step bench_lookup python3 "$root/tools/bench_lookup.py" --gemmtune "$gt" \
  --table "$root/docs/results/h200-llm-table.json" --limit 10 \
  --shapes 4000x4096x4096,32x4096x4096,4095x4097x4096:f16
# The same with every transfer, unbacked (the rule before evidence): what the transfers would run,
# per rule against the default (it fails where one is more than 1 % slower: the reason for evidence).
step bench_lookup_any python3 "$root/tools/bench_lookup.py" --gemmtune "$gt" \
  --table "$root/docs/results/h200-llm-table.json" --limit 10 --transfers any \
  --shapes 4000x4096x4096,32x4096x4096,4095x4097x4096:f16
# Evidence for the committed table, on the GPU model it was measured on (an H200): each entry's
# neighbours' answers timed at its shape against cuBLASLt's pick; the table with its evidence is
# written beside the logs (docs/lookup.md, "Backed answers").
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
if [ "$gpu_name" = "NVIDIA H200" ]; then
  step validate_llm "$gt" --db "$work/validate.db" validate --table "$root/docs/results/h200-llm-table.toml" \
    -o "$log/h200-llm-table-validated.toml"
elif [[ validate_llm =~ ${CHECK_STEPS:-.} ]]; then
  printf '%-28s skipped: the committed table is an H200'"'"'s, this GPU is %s\n' validate_llm "${gpu_name:-unknown}" | tee -a "$summary"
fi
# The install test's consumer (built against the installed package) on the GPU: two entries of
# the committed table, each checked against a float64 product.
if [ -x "$root/carry/consumer/bin/consumer_cpp" ]; then
  step consumer_gpu bash -c 'export LD_LIBRARY_PATH=$1/carry/consumer/lib:$LD_LIBRARY_PATH
    for shape in "1 4096 4096" "16 12288 4096"; do
      $1/carry/consumer/bin/consumer_cpp "$1/docs/results/h200-llm-table.toml" $shape 3 0 || exit; done' _ "$root"
elif [[ consumer_gpu =~ ${CHECK_STEPS:-.} ]]; then
  printf '%-28s skipped: no carry/consumer (tools/pack_for_gpu.sh after the install test)\n' consumer_gpu | tee -a "$summary"
fi
step bench_torch bash -c 'GEMMTUNE_LIBRARY="$1/libgemmtune_runtime.so" PYTHONPATH="$2/python" PYTHONDONTWRITEBYTECODE=1 \
                          python3 "$2/tools/bench_torch.py" --table "$2/docs/results/h200-llm-table.json"' _ "$build" "$root"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
for py in bench_trust bench_tune bench_scale; do
  # bench_scale compares one GPU with all of them: on a one-GPU host both runs are the same.
  if [ "$py" = bench_scale ] && [ "$ngpu" -lt 2 ]; then
    printf '%-28s skipped: %s GPU on this host\n' "$py" "$ngpu" | tee -a "$summary"
    continue
  fi
  step "$py" python3 "$root/tools/$py.py" --gemmtune "$gt"
done
echo "failed steps: $failed" | tee -a "$summary"
rm -rf "$work"
exit $failed
