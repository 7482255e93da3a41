#!/usr/bin/env bash
# Installs the Debian 12 packages gemmtune builds with, where they are missing. The CUDA
# toolkit (nvcc, NVRTC, cuBLASLt) is expected under /usr/local/cuda.
set -euo pipefail
pkgs=(cmake ninja-build g++ libboost-dev libtomlplusplus-dev catch2 libcli11-dev libfmt-dev
      nlohmann-json3-dev libsqlite3-dev libxxhash-dev libeigen3-dev python3-matplotlib
      python3-pytest python3-pip python3-setuptools python3-wheel
      pkg-config)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# cuobjdump, for the tests that read the SASS of what NVRTC built (a CUDA toolkit installed
# without it: PyPI has it as nvidia-cuda-cuobjdump).
find_cuobjdump='import glob, nvidia, sys; sys.exit(not any(glob.glob(d + "/*/bin/cuobjdump") for d in nvidia.__path__))'
if ! command -v cuobjdump >/dev/null && ! python3 -c "$find_cuobjdump" 2>/dev/null; then
  echo "installing cuobjdump from PyPI (nvidia-cuda-cuobjdump)"
  python3 -m pip install --quiet --user nvidia-cuda-cuobjdump 2>/dev/null ||
    python3 -m pip install --quiet --user --break-system-packages nvidia-cuda-cuobjdump
fi
if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "error: the CUDA toolkit (nvcc) was not found under /usr/local/cuda" >&2
  exit 1
fi
