#!/usr/bin/env bash
# Builds the SupraSeal peer of benches/filecoin/h200.sh on a machine with no
# GPU: c2_peer with filecoin-proofs' `cuda-supraseal` (SupraSeal's C2 and
# neptune's / bellperson's CUDA kernels), into target-supraseal/ (19 min on
# 2 cores), copied to .gpu/c2_peer_supraseal.
set -euo pipefail
cd "$(dirname "$0")/../.."
eval "$(../shared/gpu/cuda-toolchain.sh)"
# No driver here: link against a stand-in libcuda.so.1 whose entry points
# (cuda-driver-sys's list) all return CUDA_ERROR_NO_DEVICE. Where the binary
# runs, the real driver is loaded.
# The registry's sources must be there for the stub's list (a fresh machine
# has none until a build or a fetch).
cargo fetch --locked
stub=target-supraseal/cuda-stub
mkdir -p "$stub"
registry=$(cargo metadata --format-version 1 | python3 -c \
  'import json,sys; print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"]=="cuda-driver-sys"))' \
  2>/dev/null || true)
src=${registry%/Cargo.toml}
[ -d "$src" ] || src=$(ls -d ~/.cargo/registry/src/*/cuda-driver-sys-* | head -1)
grep -rhoE "pub fn cu[A-Za-z0-9_]+" "$src/src" | sort -u | sed 's/pub fn //' |
  awk '{print "int " $1 "(void) { return 100; }"}' > "$stub/stub.c"
cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$stub/libcuda.so.1" "$stub/stub.c"
ln -sf libcuda.so.1 "$stub/libcuda.so"
export LIBRARY_PATH=$PWD/$stub CUDA_LIBRARY_PATH=$PWD/$stub LD_LIBRARY_PATH=$PWD/$stub:$LD_LIBRARY_PATH
# sppark's list stops at sm_80 SASS + PTX: add the H200's own; no device
# debug code (with debug info the cc crate passes nvcc -G).
export NVCC_APPEND_FLAGS="$NVCC_APPEND_FLAGS -gencode arch=compute_90,code=sm_90"
export CARGO_PROFILE_RELEASE_DEBUG=false
CARGO_TARGET_DIR=target-supraseal cargo build --release -p zkpipe-filecoin \
  --example c2_peer --features testing,supraseal
mkdir -p .gpu && cp target-supraseal/release/examples/c2_peer .gpu/c2_peer_supraseal
strip .gpu/c2_peer_supraseal
ls -la .gpu/c2_peer_supraseal
