#!/usr/bin/env bash
# Fuzzes the job, table and replay-recording loaders with libFuzzer (clang), AddressSanitizer
# and UndefinedBehaviorSanitizer, one target after the other, starting from the committed seed
# corpus.
#   tools/run_fuzz.sh [SECONDS] [TARGET...]   (default 60 s per target; targets: job table recording)
# Environment: FUZZ_BUILD_DIR (default build-fuzz), CLANG (default clang++), FUZZ_JOBS (build jobs).
# A failing input is written to $FUZZ_BUILD_DIR/findings/<target>/ and the script exits
# non-zero; new inputs that reach new code go to $FUZZ_BUILD_DIR/findings/<target>/corpus
# (the committed corpus in tests/fuzz/corpus is only read).
set -euo pipefail
seconds=${1:-60}
shift || true
targets=${*:-job table recording}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
cxx=${CLANG:-clang++}
cc=${cxx/clang++/clang}

# Everything the loaders run is instrumented (fuzzer-no-link: coverage without libFuzzer's
# main); the fuzz targets add -fsanitize=fuzzer at link time. UB aborts rather than logs.
# (-Wno-unknown-warning-option: the project's GCC-only -Wno-restrict.)
san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
san="$san -Wno-unknown-warning-option"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc \
  -DCMAKE_CXX_FLAGS="$san" -DGEMMTUNE_FUZZ=ON -DBUILD_TESTING=ON >/dev/null
build_targets=""
for target in $targets; do build_targets="$build_targets fuzz_$target"; done
# shellcheck disable=SC2086
cmake --build "$build" --parallel "${FUZZ_JOBS:-$(nproc)}" --target $build_targets

status=0
for target in $targets; do
  out=$build/findings/fuzz_$target
  mkdir -p "$out/corpus"
  echo "== fuzz_$target: ${seconds} s from tests/fuzz/corpus/$target"
  # -max_len: job files, tables and the recordings worth mutating are small (the seeds are at
  # most ~6 KB); longer inputs only slow the search down.
  set +e
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$out/" -dict="$root/tests/fuzz/$target.dict" \
    "$out/corpus" "$root/tests/fuzz/corpus/$target" >"$out/log.txt" 2>&1
  rc=$?
  set -e
  grep -E '^#[0-9]+.*(INITED|DONE)|^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$out/log.txt" || true
  if [ $rc -ne 0 ]; then
    echo "fuzz_$target: FAILED (exit $rc); the log is $out/log.txt:"
    grep -E 'ERROR|runtime error|SUMMARY|fuzz_(job|table|recording):|uncaught|Test unit written|terminate' "$out/log.txt" | head -20 || true
    status=1
  fi
done
exit $status
