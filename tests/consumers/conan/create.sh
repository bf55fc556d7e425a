#!/usr/bin/env bash
# `conan create` of tinyt in both modes (header_only True and False), each building and running
# test_package/. Conan 2 comes from PyPI into a virtual environment under the build folder
# (VENV, made once); its home (CONAN_HOME) is under the build folder too, so nothing outside it
# changes. Usage: create.sh SOURCE_DIR BUILD_DIR CXX
set -euo pipefail
source_dir=$1 build_dir=$2 cxx=$3
venv=$build_dir/conan-venv
if [ ! -x "$venv/bin/conan" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "conan>=2,<3" || {
    echo "consumer (conan): cannot install Conan 2 from PyPI into $venv" >&2
    exit 1
  }
fi
export CONAN_HOME=$build_dir/consumers/conan_home CXX=$cxx
"$venv/bin/conan" profile detect --force >/dev/null
for header_only in True False; do
  "$venv/bin/conan" create "$source_dir" -pr:a "$source_dir/tests/consumers/conan/profile" \
    -o "&:header_only=$header_only" --build=missing --no-remote
done
