#!/usr/bin/env bash
# The LLM-shapes job end to end on a GPU machine, from a fresh store: tune every problem of
# configs/llm_shapes.toml on every GPU, time the table's configs beside cuBLASLt's pick
# (`compare`, GPU 0, after `gemmtune roofs` so that it prints % of the measured roof), export
# the table, and compute the table's speed-up over the pick (tools/table_speedup.py). This is
# how docs/results-h200.md's LLM section was made.
#   tools/llm_job.sh OUT_DIR [BUILD_DIR [STAGE]]     (BUILD_DIR default: carry/build, else build;
#                                                     "" gives the default with a STAGE)
# STAGE: all (default); tune (the tune only); resume (the tune again into the store a cut-off
# `tune` left in OUT_DIR: what it finished is reused, the rest tuned; its time is then no tune
# speed figure); rest (roofs, compare, export and speed-up of the store a `tune` stage left in
# OUT_DIR) -- stages fit machines that limit how long one command runs: with
# LLM_JOB_SECONDS=S the tune (or resume) is interrupted after S seconds as Ctrl-C would (it
# finishes the measurement in flight and closes the store), then carry OUT_DIR whole to the
# next call and resume. Carry the folder, not results.db alone: a tune killed outright keeps
# its last rows in results.db-wal beside it, and a resume without them tunes them again.
# steps.txt times each stage's steps from that stage's start.
# OUT_DIR gets results.db, tune.txt, roofs.txt, compare.txt, h200-llm-table.{toml,json}, speedup.txt.
# Exit status: the first failing step's (a failed roofs step only leaves compare's % roof blank).
set -uo pipefail
usage="usage: tools/llm_job.sh OUT_DIR [BUILD_DIR [all|tune|resume|rest]]"
out=${1:?$usage}
stage=${3:-all}
case $stage in all | tune | resume | rest) ;; *) echo "llm_job: unknown stage '$stage'; $usage" >&2; exit 2 ;; esac
. "$(dirname "$0")/gpu_env.sh" "${2:-}"
mkdir -p "$out"
if { [ "$stage" = all ] || [ "$stage" = tune ]; } && [ -e "$out/results.db" ]; then
  echo "llm_job: $out/results.db exists; give an empty OUT_DIR (the job is timed from a fresh store), or resume" >&2
  exit 2
fi
if { [ "$stage" = rest ] || [ "$stage" = resume ]; } && [ ! -e "$out/results.db" ]; then
  echo "llm_job: $out/results.db is missing; run the tune stage first" >&2
  exit 2
fi
export GEMMTUNE_DB=$out/results.db GEMMTUNE_CACHE_DIR=${GEMMTUNE_CACHE_DIR:-$out/cache}
job=$root/configs/llm_shapes.toml
t0=$(date +%s)
step() {  # step NAME LOG COMMAND...
  local name=$1 log=$2; shift 2
  "$@" > "$log" 2>&1
  local rc=$?
  echo "$name: rc=$rc, $(( $(date +%s) - t0 )) s since the start" | tee -a "$out/steps.txt"
  return $rc
}
# The tune under LLM_JOB_SECONDS: SIGINT, which `gemmtune tune` takes as a request to stop
# after the measurement in flight (the step then says rc=124), and a kill a minute later if
# that measurement hangs.
limit=()
[ -n "${LLM_JOB_SECONDS:-}" ] && limit=(timeout -s INT -k 60 "$LLM_JOB_SECONDS")
case $stage in
  all | tune) step tune "$out/tune.txt" "${limit[@]}" "$gt" tune --config "$job" --devices all || exit $? ;;
  resume) step resume "$out/tune-resumed-$(date +%s).txt" "${limit[@]}" "$gt" tune --config "$job" --devices all || exit $? ;;
esac
[ "$stage" = tune ] || [ "$stage" = resume ] && exit 0
step roofs "$out/roofs.txt" "$gt" roofs  # without roofs the compare still runs, its % roof column blank
step compare "$out/compare.txt" "$gt" compare --config "$job" --no-tune --rounds 5 || exit $?
step export_toml "$out/export.txt" "$gt" export -o "$out/h200-llm-table.toml" || exit $?
step export_json "$out/export_json.txt" "$gt" export -o "$out/h200-llm-table.json" || exit $?
step speedup "$out/speedup.txt" python3 "$root/tools/table_speedup.py" "$out/h200-llm-table.toml" "$out/compare.txt" ||
  exit $?
head -1 "$out/speedup.txt"
