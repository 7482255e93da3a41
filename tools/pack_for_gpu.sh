#!/usr/bin/env bash
# Copies what the GPU machine needs from a build into carry/ (git-ignored), keeping the
# build's layout: binaries, plugins, test plugins, benchmark tools. The GPU machine has the
# CUDA runtime libraries and the driver but no Boost / TOML++ / SQLite / Catch2, so every
# binary here links those statically or header-only.
#   tools/pack_for_gpu.sh [BUILD_DIR]      (default: build)
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/carry/build
rm -rf "$root/carry/build"
mkdir -p "$out/tests" "$out/tools"
cp "$build/gemmtune" "$out/"
cp -P "$build"/libgemmtune_runtime.so* "$out/"  # the Python package's library (symlinks kept)
cp -r "$build/plugins" "$out/"
cp "$build/tests/gemmtune_tests" "$out/tests/"
for h in store_writer fake_worker; do [ -x "$build/tests/$h" ] && cp "$build/tests/$h" "$out/tests/"; done
[ -d "$build/tests/test_plugins" ] && cp -r "$build/tests/test_plugins" "$out/tests/"
for f in "$build"/tools/bench_* "$build"/tools/example_*; do
  [ "$(basename "$f")" = bench_search ] && continue  # replays on the CPU: check_gpu.sh does not run it
  [ -f "$f" ] && [ -x "$f" ] && cp "$f" "$out/tools/"
done
# The install test's out-of-tree consumer (ctest -R cpu_install builds it) with the installed
# library and plugins it runs on (the installed prefix, moved: it names no path of its own).
installed=$build/tests/install/work
rm -rf "$root/carry/consumer"
if [ -x "$installed/consumer/consumer_cpp" ] && [ -d "$installed/moved/lib" ]; then
  mkdir -p "$root/carry/consumer/bin" "$root/carry/consumer/lib"
  cp "$installed/consumer/consumer_cpp" "$root/carry/consumer/bin/"
  cp -P "$installed"/moved/lib/libgemmtune_runtime.so* "$root/carry/consumer/lib/"
  cp -r "$installed/moved/lib/gemmtune" "$root/carry/consumer/lib/"
fi
strip --strip-debug "$out/gemmtune" "$out/tests/gemmtune_tests" "$out"/tools/* 2>/dev/null || true
# Which source the build is of, read on this side: the GPU machine's copy of the tree need not
# carry the repository's history (tools/check_gpu.sh prints this first).
{
  echo "commit $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "uncommitted changes $(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | wc -l)"
  echo "packed $(date -u +%Y-%m-%dT%H:%M:%SZ) from $build"
} > "$out/BUILD_INFO"
du -sh "$root/carry"
