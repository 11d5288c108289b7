#!/bin/bash
# BN254 curve crates side by side on this machine: field multiplication,
# G1/G2 MSM and the Fr NTT of arkworks, halo2curves and lambdaworks.
# Three interleaved rounds; each binary: a warm-up, then the median of 7.
# Usage: benches/bn254-crates/run.sh [OUT_DIR]   (THREADS=2 by default)
set -eu
cd "$(dirname "$0")"
out=${1:-results}
mkdir -p "$out"
cargo build --release
export RAYON_NUM_THREADS=${THREADS:-2}
for round in 1 2 3; do
  for p in ark halo2 lw; do
    ./target/release/bench-$p > "$out/$p.round$round.txt" 2>&1
  done
done
tail -n +1 "$out"/*.round*.txt
