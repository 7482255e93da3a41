#!/usr/bin/env bash
# The install as another project meets it: `cmake --install` of this build into a fresh
# prefix (no rebuild), then, with no gemmtune variable set and nothing from the build tree:
#  1. the installed CLI lists every plugin the build registered, loaded from the prefix;
#  2. an out-of-tree CMake project (tests/consumer) finds the package and builds a C and a
#     C++ program on the shared library and one on the archive; each loads the committed
#     LLM table, looks up an entry's own key (exact) and, on a GPU, runs it once;
#  3. the same C program builds with pkg-config (shared), the C++ one with gemmtune-static;
#  4. the Python package, installed with pip (its Python only, --config-settings=wheel.cmake=false: the short -C needs pip 23.1, Debian 12 has 23.0), finds the installed library
#     through the installed CLI on PATH;
#  5. the prefix moved elsewhere still works (nothing in it names where it was installed).
# Usage: test_install.sh BUILD_DIR SOURCE_DIR WORK_DIR EXPECTED_PLUGINS_FILE CUDA_LIB_DIR [PYTHON]
set -euo pipefail
build=$1 src=$2 work=$3 expected=$4 cuda_lib=$5 py=${6:-python3}
rm -rf "$work"
mkdir -p "$work"
unset GEMMTUNE_PLUGIN_PATH GEMMTUNE_DB GEMMTUNE_CACHE_DIR GEMMTUNE_LIBRARY GEMMTUNE_CLI
export XDG_CACHE_HOME=$work/xdg-cache XDG_DATA_HOME=$work/xdg-data   # keep compiled kernels out of $HOME
prefix=$work/prefix
table=$src/docs/results/h200-llm-table.toml
# An entry of the table: 1x4096x4096 bf16 (dtype 3), layout nn (0), and its config.
shape=(1 4096 4096 3 0)
config=cublaslt_algo66_tile128x8_stages64xauto_split_k1_reductionnone_swizzle0_custom1_cluster4x1x1_innerundef_workspace0
step() { printf '\n== %s\n' "$*"; }
fail() { echo "FAILED: $*" >&2; exit 1; }

step "cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" > "$work/install.log" || { cat "$work/install.log"; fail "install"; }
for f in bin/gemmtune include/gemmtune_runtime.h include/gemmtune_runtime.hpp lib/libgemmtune_runtime.so \
         lib/libgemmtune_runtime.a lib/cmake/gemmtune/gemmtune-config.cmake lib/pkgconfig/gemmtune.pc \
         lib/pkgconfig/gemmtune-static.pc share/gemmtune/configs/default_job.toml share/gemmtune/report.py \
         share/gemmtune/gemmtune_report/page.py; do
  [ -e "$prefix/$f" ] || fail "$f is not installed"
done
echo "installed files present"

check_cli() {  # the CLI at $1 loads exactly the expected plugins, all from $2
  "$1" list --json > "$work/list.json"
  "$py" - "$work/list.json" "$expected" "$2" <<'PY'
import json, os, sys
listed = json.load(open(sys.argv[1]))
want = sorted(open(sys.argv[2]).read().split())
paths = sorted(p["path"] for p in listed)
got = sorted(os.path.basename(p) for p in paths)
if got != want:
    sys.exit(f"plugins loaded {got}, expected {want}")
outside = [p for p in paths if os.path.dirname(p) != os.path.realpath(sys.argv[3])]
if outside:
    sys.exit(f"plugins loaded from outside {sys.argv[3]}: {outside}")
print(f"{len(got)} plugins loaded from {sys.argv[3]}")
PY
}
step "the installed CLI finds the installed plugins"
(cd "$work" && check_cli "$prefix/bin/gemmtune" "$prefix/lib/gemmtune/plugins")
"$prefix/bin/gemmtune" lookup --table "$table" --shape 1x4096x4096 --dtype bf16 | tee "$work/lookup.txt"
# The text names the config readably; --json carries the canonical name.
"$prefix/bin/gemmtune" --json lookup --table "$table" --shape 1x4096x4096 --dtype bf16 > "$work/lookup.json"
"$py" -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["config"] != sys.argv[2])' "$work/lookup.json" "$config" ||
  fail "installed lookup answered $(head -1 "$work/lookup.txt")"
head -1 "$work/lookup.txt" | grep -q "^cublaslt  algo=66 tile=128x8 " || fail "installed lookup printed $(head -1 "$work/lookup.txt")"

step "an out-of-tree CMake project: find_package(gemmtune CONFIG)"
cmake -S "$src/tests/consumer" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix" > "$work/consumer-configure.log" || { cat "$work/consumer-configure.log"; fail "configure"; }
cmake --build "$work/consumer" > "$work/consumer-build.log" || { cat "$work/consumer-build.log"; fail "build"; }
for exe in consumer_c consumer_cpp consumer_cpp_static; do
  echo "-- $exe"
  (cd "$work" && "$work/consumer/$exe" "$table" "${shape[@]}") | tee "$work/$exe.txt"
  grep -q "^match=0 config=$config how=exact" "$work/$exe.txt" || fail "$exe did not answer the exact entry"
done
grep -q "M = 0 refused: sizes 0x4096x4096" "$work/consumer_cpp.txt" || fail "consumer_cpp: gemmtune::Error not caught"
if "$work/consumer/consumer_c" "$work/no-such-table.toml" "${shape[@]}" 2> "$work/bad.txt"; then
  fail "consumer_c accepted a missing table"
fi
grep -q "gemmtune_create: bad table: .*no-such-table.toml" "$work/bad.txt" || fail "missing table: $(cat "$work/bad.txt")"
echo "a missing table: $(cat "$work/bad.txt")"

step "pkg-config"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cc -O1 -o "$work/consumer_pc" "$src/tests/consumer/consumer.c" $(pkg-config --cflags --libs gemmtune) \
   -L"$cuda_lib" -lcudart -Wl,-rpath,"$prefix/lib" -Wl,-rpath,"$cuda_lib"
"$work/consumer_pc" "$table" "${shape[@]}" | grep -q "^match=0 config=$config" || fail "pkg-config consumer (shared)"
c++ -O1 -std=c++17 -o "$work/consumer_pc_static" "$src/tests/consumer/consumer.cpp" \
    -DCONSUMER_PLUGIN_DIR="\"$(pkg-config --variable=plugindir gemmtune-static)\"" $(pkg-config --cflags --libs gemmtune-static)
"$work/consumer_pc_static" "$table" "${shape[@]}" | grep -q "^match=0 config=$config" || fail "pkg-config consumer (static)"
echo "built and ran with pkg-config gemmtune and gemmtune-static"

step "pip install ./python, its Python only; it finds the installed library through the installed CLI on PATH"
# From a copy of what the package is made of (a wheel build writes build/ beside the sources).
# A full `pip install ./python` compiles the project (scikit-build-core over its CMake) and bundles
# the library; wheel.cmake=false installs the Python alone, which must then find this install's.
mkdir -p "$work/python-src"
cp -r "$src/python/pyproject.toml" "$src/python/gemmtune" "$work/python-src/"
rm -rf "$work/python-src/gemmtune/lib"
if "$py" -c "import scikit_build_core" 2>/dev/null; then
  "$py" -m pip install --quiet --no-deps --no-build-isolation --no-index --root-user-action=ignore \
        --config-settings=wheel.cmake=false --target "$work/site" "$work/python-src" || fail "pip install ./python"
else
  echo "note: $py has no scikit-build-core (tools/install_deps.sh installs it): the package is copied, not pip-installed"
  mkdir -p "$work/site" && cp -r "$work/python-src/gemmtune" "$work/site/"
fi
(cd "$work" && PATH="$prefix/bin:$PATH" PYTHONPATH="$work/site" PYTHONDONTWRITEBYTECODE=1 "$py" - "$table" "$prefix" "$config" "$work/site") <<'PY'
import os, sys
import gemmtune
table, prefix, config, site = sys.argv[1:]
assert gemmtune.__file__.startswith(site), gemmtune.__file__
lib = gemmtune.library_path()
assert os.path.realpath(lib).startswith(os.path.realpath(prefix)), lib
t = gemmtune.Table.load(table)
c = t.lookup(1, 4096, 4096, dtype="bf16")
assert (c.match, c.config) == ("exact", config), c
print(f"gemmtune {gemmtune.__version__} from {lib}: {c.match} {c.config}")
PY

step "the prefix, moved, still finds its plugins"
mv "$prefix" "$work/moved"
(cd "$work" && check_cli "$work/moved/bin/gemmtune" "$work/moved/lib/gemmtune/plugins")
echo
echo "install test passed"
