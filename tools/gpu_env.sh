# Sourced by the scripts that run on the GPU machine (check_gpu.sh, run_lab.sh, llm_job.sh):
#   . "$(dirname "$0")/gpu_env.sh" "${BUILD_DIR_ARGUMENT:-}"
# Sets root (the checkout), build (the given directory, else carry/build when a build was
# packed there by tools/pack_for_gpu.sh, else build), gt (the gemmtune binary) and puts the
# CUDA runtime on the library path.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-}
if [ -z "$build" ]; then
  if [ -x "$root/carry/build/gemmtune" ]; then build=$root/carry/build; else build=$root/build; fi
fi
gt=$build/gemmtune
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64
