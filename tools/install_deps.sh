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
# cuobjdump and the nvdisasm it disassembles with, for the tests that read the SASS of what
# NVRTC built (a CUDA toolkit installed without them: PyPI has them as nvidia-cuda-cuobjdump and
# nvidia-cuda-nvdisasm, which land in one bin folder; the tests put that folder on PATH).
for tool in cuobjdump nvdisasm; do
  find_tool="import glob, nvidia, sys; sys.exit(not any(glob.glob(d + '/*/bin/$tool') for d in nvidia.__path__))"
  if ! command -v $tool >/dev/null && ! python3 -c "$find_tool" 2>/dev/null; then
    echo "installing $tool from PyPI (nvidia-cuda-$tool)"
    python3 -m pip install --quiet --user nvidia-cuda-$tool 2>/dev/null ||
      python3 -m pip install --quiet --user --break-system-packages nvidia-cuda-$tool
  fi
done
# scikit-build-core, the Python package's build backend (pip install ./python builds the runtime
# library and its plugins with the project's CMake and bundles them); Debian 12 has no package of it.
if ! python3 -c "import scikit_build_core" 2>/dev/null; then
  echo "installing scikit-build-core from PyPI"
  python3 -m pip install --quiet --user "scikit-build-core>=0.10" 2>/dev/null ||
    python3 -m pip install --quiet --user --break-system-packages "scikit-build-core>=0.10"
fi
if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "error: the CUDA toolkit (nvcc) was not found under /usr/local/cuda" >&2
  exit 1
fi
