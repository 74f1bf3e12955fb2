#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds the uploaded trainer sources on a node against the node's own LibTorch.
#   build-trainer.sh SRC BUILD   (BUILD is named after the sources' hash: a finished build is reused)
# LibTorch is found through $Torch_DIR, then Debian's libtorch-dev, then the torch package of python3.
# Several nodes sharing one home directory (NFS) build once: the others wait on the lock.
set -u
src=$1
build=$2
[ -f "$build/ok" ] && { echo "cached $build"; exit 0; }
lock="$build.lock"
while ! mkdir "$lock" 2>/dev/null; do
    # A lock older than an hour belongs to a build that died with its node.
    if [ -n "$(find "$lock" -maxdepth 0 -mmin +60 2>/dev/null)" ]; then rmdir "$lock" 2>/dev/null; fi
    sleep 1
done
trap 'rmdir "$lock" 2>/dev/null' EXIT INT TERM
[ -f "$build/ok" ] && { echo "cached $build"; exit 0; }

torch_dir=${Torch_DIR:-}
if [ -z "$torch_dir" ]; then
    for candidate in /usr/lib/*/cmake/Torch /usr/share/cmake/Torch /usr/local/lib/cmake/Torch; do
        if [ -f "$candidate/TorchConfig.cmake" ]; then torch_dir=$candidate; break; fi
    done
fi
if [ -z "$torch_dir" ]; then
    for py in python3 /usr/bin/python3; do
        prefix=$("$py" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null) || continue
        if [ -n "$prefix" ] && [ -f "$prefix/Torch/TorchConfig.cmake" ]; then torch_dir=$prefix/Torch; break; fi
    done
fi
if [ -z "$torch_dir" ]; then
    echo "build-trainer: no LibTorch found (set Torch_DIR in the job's env, install libtorch-dev, or pip install torch)" >&2
    exit 3
fi
command -v cmake >/dev/null 2>&1 || { echo "build-trainer: cmake is not installed on this node" >&2; exit 3; }
jobs=$(nproc 2>/dev/null || echo 2)
echo "building with Torch_DIR=$torch_dir"
# With debug info (-O2 -g, as this machine's own build): a rank started under gdbserver is debugged with it.
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DTorch_DIR=$torch_dir" >"$build.log" 2>&1 &&
    cmake --build "$build" -j "$jobs" >>"$build.log" 2>&1 || {
    echo "build-trainer: build failed; the last lines of $build.log:" >&2
    tail -n 30 "$build.log" >&2
    exit 4
}
: >"$build/ok"
echo "built $build"
