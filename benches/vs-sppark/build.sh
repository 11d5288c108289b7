#!/usr/bin/env bash
# Builds sppark_bench (sppark's BLS12-381 MSM/NTT, timed as zkpipe times its
# own) and sppark_bench_bn254 (the same source with -DFEATURE_BN254: BN254
# G1 MSM and NTT) on a machine with no GPU: nvcc 13.0 for sm_90 (the H200),
# the CUDA runtime linked statically (it loads the driver's libcuda where it
# runs), blst built from the registry copy's C and assembly (blst's API for
# the BLS12-381 side; its assembly under sppark's host field types for both).
# Output target/vs-sppark/sppark_bench{,_bn254}, stripped copies in .gpu/.
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

# The host side of the bench (inputs, reference results): plain C++. BLS12-381
# through blst's API; BN254 through sppark's host-side types.
if stale "$out/ref.o" "$here/ref.cpp" "$here/ref.hpp"; then
  c++ -O2 -std=c++17 -Wall -Wextra -I"$blst/bindings" -c "$here/ref.cpp" -o "$out/ref.o"
fi
if stale "$out/ref_bn254.o" "$here/ref_bn254.cpp" "$here/ref.hpp"; then
  c++ -O2 -std=c++17 -Wall -Wextra -Wno-unused-function -D__ADX__ -DFEATURE_BN254 \
    -I"$sppark/sppark" -I"$blst/src" -c "$here/ref_bn254.cpp" -o "$out/ref_bn254.o"
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

# The two curves' objects from the one source, side by side (one nvcc each).
t=$SECONDS pids=()
for curve in bls bn254; do
  obj=$out/sppark_bench.o defs=()
  [ $curve = bn254 ] && obj=$out/sppark_bench_bn254.o defs=(-DFEATURE_BN254)
  if stale "$obj" "$here/sppark_bench.cu" "$here/ref.hpp"; then
    echo "compiling sppark_bench.cu${defs:+ ${defs[*]}} for sm_90 (MSM and NTT kernels: ~30 s on 2 cores)"
    nvcc "${nvcc_flags[@]}" "${defs[@]}" -DSPPARK_VERSION="\"$sppark_version\"" \
      -c "$here/sppark_bench.cu" -o "$obj" &
    pids+=($!)
  fi
done
for p in "${pids[@]}"; do wait "$p" || { echo "build.sh: nvcc failed" >&2; exit 1; }; done
[ ${#pids[@]} -gt 0 ] && echo "  nvcc: $((SECONDS - t)) s"

mkdir -p .gpu
for bin in sppark_bench sppark_bench_bn254; do
  ref=$out/ref.o
  [ $bin = sppark_bench_bn254 ] && ref=$out/ref_bn254.o
  objs=("$out/$bin.o" "$ref" "$out/all_gpus.o" "$out/libblst.a")
  if stale "$out/$bin" "${objs[@]}"; then
    nvcc -gencode "$gencode" -cudart static -o "$out/$bin" "${objs[@]}" \
      -lpthread -ldl -lrt
  fi
  cp "$out/$bin" ".gpu/$bin"
  strip ".gpu/$bin"
  ls -la "$out/$bin" ".gpu/$bin"
done
echo "sppark: $sppark_version; build took $((SECONDS - start)) s"
