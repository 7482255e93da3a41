#!/usr/bin/env bash
# Runs the lab's experiments (configs/lab/*.toml) on the GPU into one store, then writes the
# report. From a build carried to the GPU machine (tools/pack_for_gpu.sh) or a local build.
#   tools/run_lab.sh OUT_DIR [BUILD_DIR]       (BUILD_DIR default: carry/build, else build)
# OUT_DIR gets lab.db, one log per job and the report (report/index.html). Exit status: the
# number of jobs that failed. LAB_DEVICES=all (or 0,1,...) tunes each job on several GPUs
# (`gemmtune tune --devices`); unset, the jobs run on GPU 0.
set -uo pipefail
out=${1:?usage: tools/run_lab.sh OUT_DIR [BUILD_DIR]}
. "$(dirname "$0")/gpu_env.sh" "${2:-}"
mkdir -p "$out"
export GEMMTUNE_SOURCE_DIR=$root GEMMTUNE_DB=$out/lab.db
failed=0
"$gt" roofs > "$out/roofs.log" 2>&1 || failed=$((failed + 1))
for job in "$root"/configs/lab/*.toml; do
  name=$(basename "$job" .toml)
  t0=$(date +%s)
  "$gt" --quiet tune --config "$job" ${LAB_DEVICES:+--devices "$LAB_DEVICES"} > "$out/$name.log" 2>&1
  rc=$?
  printf '%-16s rc=%s %4d s\n' "$name" "$rc" $(( $(date +%s) - t0 )) | tee -a "$out/summary.txt"
  [ $rc -ne 0 ] && failed=$((failed + 1))
done
"$gt" report -o "$out/report" $(for j in "$root"/configs/lab/*.toml; do echo --job "$j"; done) > "$out/report.log" 2>&1 ||
  failed=$((failed + 1))
echo "failed: $failed" | tee -a "$out/summary.txt"
exit $failed
