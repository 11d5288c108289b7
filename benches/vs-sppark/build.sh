#!/usr/bin/env bash
# Builds sppark_bench (sppark's BLS12-381 MSM/NTT, timed as zkpipe times its
# own) on a machine with no GPU: nvcc 13.0 for sm_90 (the H200), the CUDA
# runtime linked statically (it loads the driver's libcuda where it runs),
# blst built from the registry copy's C and assembly. Output
# target/vs-sppark/sppark_bench, stripped copy in .gpu/sppark_bench.
# Idempotent: only what is older than its inputs is rebuilt.
# Usage: benches/vs-sppark/build.sh   (from anywhere in the repo)
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/../.."
start=$SECONDS
eval "$(../shared/gpu/cuda-toolchain.sh)"

# Newest registry copy of a crate version (cargo fetch puts them there).
crate_dir() {
  local d found=
  for d in "$HOME"/.cargo/registry/src/*/"$1"; do [ -d "$d" ] && found=$d; done
  [ -n "$found" ] || { echo "build.sh: no $1 in ~/.cargo/registry/src (run 'cargo fetch')" >&2; exit 1; }
  echo "$found"
}
sppark=$(crate_dir sppark-0.1.16)
blst=$(crate_dir blst-0.3.17)/blst
sppark_sha=$(sed -n 's/.*"sha1": *"\([0-9a-f]\{7\}\).*/\1/p' "$sppark/.cargo_vcs_info.json" 2>/dev/null || true)
sppark_version="crate 0.1.16${sppark_sha:+ (git $sppark_sha)}"

out=target/vs-sppark
mkdir -p "$out"
here=benches/vs-sppark

# True when $1 is missing or older than any of the rest (or this script).
stale() {
  local target=$1; shift
  [ -e "$target" ] || return 0
  local f
  for f in "$@" "$self"; do [ "$f" -nt "$target" ] && return 0; done
  return 1
}

# blst as its crate builds it on an x86-64 host with ADX (both the dev
# machine and the H200's host have it): server.c + assembly.S, -D__ADX__.
# sppark's host-side field types call the same assembly, so the .cu is
# compiled with -D__ADX__ too.
blst_flags=(-O2 -fno-builtin -mno-avx -Wno-unused-function -D__ADX__ -fPIC)
if stale "$out/libblst.a" "$blst/src/server.c" "$blst/build/assembly.S"; then
  echo "building blst ($blst)"
  cc "${blst_flags[@]}" -c "$blst/src/server.c" -o "$out/blst_server.o"
  cc "${blst_flags[@]}" -c "$blst/build/assembly.S" -o "$out/blst_assembly.o"
  rm -f "$out/libblst.a"
  ar rcs "$out/libblst.a" "$out/blst_server.o" "$out/blst_assembly.o"
fi

# blst's side of the bench (inputs, reference results): plain C++.
if stale "$out/ref.o" "$here/ref.cpp" "$here/ref.hpp"; then
  c++ -O2 -std=c++17 -Wall -Wextra -I"$blst/bindings" -c "$here/ref.cpp" -o "$out/ref.o"
fi

gencode="arch=compute_90,code=sm_90"   # the H200's own SASS, nothing else
nvcc_flags=(-O3 -std=c++17 -gencode "$gencode"
  -I"$sppark/sppark" -I"$blst/src"
  -D__ADX__ -Xcompiler -Wno-unused-function -Xcompiler -Wno-subobject-linkage)

# sppark's device registry (select_gpu, gpu_props), host code.
if stale "$out/all_gpus.o" "$sppark/sppark/util/all_gpus.cpp"; then
  echo "compiling sppark util/all_gpus.cpp"
  nvcc "${nvcc_flags[@]}" -c "$sppark/sppark/util/all_gpus.cpp" -o "$out/all_gpus.o"
fi

if stale "$out/sppark_bench.o" "$here/sppark_bench.cu" "$here/ref.hpp"; then
  echo "compiling sppark_bench.cu for sm_90 (G1, G2 and NTT kernels: ~30 s on 2 cores)"
  t=$SECONDS
  nvcc "${nvcc_flags[@]}" -DSPPARK_VERSION="\"$sppark_version\"" \
    -c "$here/sppark_bench.cu" -o "$out/sppark_bench.o"
  echo "  nvcc: $((SECONDS - t)) s"
fi

objs=("$out/sppark_bench.o" "$out/ref.o" "$out/all_gpus.o" "$out/libblst.a")
if stale "$out/sppark_bench" "${objs[@]}"; then
  nvcc -gencode "$gencode" -cudart static -o "$out/sppark_bench" "${objs[@]}" \
    -lpthread -ldl -lrt
fi

mkdir -p .gpu
cp "$out/sppark_bench" .gpu/sppark_bench
strip .gpu/sppark_bench
ls -la "$out/sppark_bench" .gpu/sppark_bench
echo "sppark: $sppark_version; build took $((SECONDS - start)) s"
