#!/usr/bin/env bash
# Installs every Debian package kiln's build, tests and demo need. Idempotent: installs only what
# is missing, so a second run is fast. Needs root (or sudo).
set -euo pipefail

packages=(
  cmake ninja-build ccache g++ pkg-config
  libprotobuf-dev protobuf-compiler zlib1g-dev
  catch2
  clang-14 libclang-rt-14-dev libomp-14-dev  # ASan/UBSan build, libFuzzer targets
  llvm-16-dev libmlir-16-dev mlir-16-tools     # compiler/: kernels through MLIR and LLVM
  libdnnl-dev libopenblas-dev                  # library calls of the cpu backend
  graphviz                      # kiln dot -o FILE.svg
  openmpi-bin libopenmpi-dev    # data-parallel training (kiln train --distributed mpi)
  python3-venv                  # test-only Python environments (ONNX Runtime, TensorBoard readers)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "setup: all packages present"
