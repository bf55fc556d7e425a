#!/usr/bin/env bash
# Installs the Debian packages tinyt needs to build and test; does nothing when all are present.
# `tools/setup.sh viz` adds the browser of `make test-viz`.
set -euo pipefail

# Add packages here (one list for everything: toolchain, headers, runtimes, data sets).
# clang: the second compiler of `make test-clang` (clang 14 on Debian 12), with g++'s libstdc++.
# ocl-icd-libopencl1 + pocl-opencl-icd: the OpenCL loader and PoCL, an OpenCL device on the CPU,
# which the tests run the CL backend on. python3-venv: the tests' Conan goes into a virtual
# environment under the build folder. git: the FetchContent consumer build. openmpi-bin (with
# libopenmpi3): mpirun and the MPI library tinyt's communicator opens, for the two-process tests.
# espeak-ng: speech for the test of examples/vad. imagemagick + fonts-dejavu-core: the test of
# examples/ocr draws its text with ImageMagick's convert in DejaVu Sans. mesa-vulkan-drivers:
# Mesa's Vulkan driver on the CPU (lavapipe), the device the WebGPU tests run on under wgpu-native.
PACKAGES="g++ clang make cmake python3 python3-venv git libboost-dev xtl-dev doctest-dev ccache libllvm15 zlib1g dataset-fashion-mnist ocl-icd-libopencl1 pocl-opencl-icd mesa-vulkan-drivers openmpi-bin libopenmpi3 espeak-ng imagemagick fonts-dejavu-core"
# `tools/setup.sh viz`: Chromium too, the browser `make test-viz` opens VIZ pages in.
if [ "${1:-}" = viz ]; then PACKAGES="$PACKAGES chromium"; fi

if ! command -v dpkg >/dev/null 2>&1; then
  echo "tools/setup.sh: no dpkg (not Debian); make sure these are installed: $PACKAGES" >&2
  exit 0
fi

missing=()
for pkg in $PACKAGES; do
  dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed' || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "tools/setup.sh: missing packages: ${missing[*]}" >&2
  echo "Not root and no sudo: install them as root with" >&2
  echo "  apt-get install --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

echo "tools/setup.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
