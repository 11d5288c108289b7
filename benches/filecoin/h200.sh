#!/usr/bin/env bash
# PoRep C2 for a 2 KiB sector on one machine, one run: zkpipe (CUDA and CPU
# backends) and filecoin-proofs' own seal_commit_phase2 (bellperson 0.27 on
# the CPU) on the same C1 output and the same parameters.
#
# Staged by ../shared/gpu/stage.sh into .gpu/: zkpipe, the backend plugins
# and c2_peer (`cargo build --release --example c2_peer -p zkpipe-filecoin
# --features testing`). Usage: bash benches/filecoin/h200.sh [RUNS]
set -euo pipefail
RUNS=${1:-3}
OUT=${OUT:-/tmp/fil-bench-out}
mkdir -p "$OUT"
export ZKPIPE_PLUGIN_PATH=$PWD/.gpu
export FIL_PROOFS_PARAMETER_CACHE=/tmp/fil-params
export FIL_PROOFS_PARENT_CACHE=/tmp/fil-parents
export ZKPIPE_CACHE_DIR=/tmp/zkpipe-cache
work=/tmp/fil-sector
rm -rf "$work" && mkdir -p "$work"
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
# Wall time and peak RSS (GNU time when the machine has it).
timed() { if [ -x /usr/bin/time ]; then /usr/bin/time -v "$@"; else local t=$SECONDS; "$@"; echo "Elapsed (wall clock): $((SECONDS - t)) s" >&2; fi; }

timed ./.gpu/zkpipe filecoin params --sector-size 2KiB --proofs porep 2> "$OUT/params.err"
grep -E "made|Elapsed|Maximum resident" "$OUT/params.err"
ids=$(./.gpu/c2_peer seal "$work")
echo "$ids"
prover=$(echo "$ids" | awk '{print $2}')
c1=$work/c1.json

for backend in cuda cpu; do
  for i in $(seq "$RUNS"); do
    timed ./.gpu/zkpipe filecoin seal-commit --c1 "$c1" --sector-id 42 \
      --prover-id "$prover" --backend "$backend" --out "$OUT/proof-$backend.bin" \
      2> "$OUT/c2-$backend-$i.err"
    echo "zkpipe $backend run $i:"
    grep -E "partition|seal-commit|Elapsed|Maximum resident" "$OUT/c2-$backend-$i.err"
  done
done
for i in $(seq 2); do
  timed ./.gpu/c2_peer c2 "$c1" 42 "$prover" 2> "$OUT/peer-$i.err"
  grep -E "Elapsed|Maximum resident" "$OUT/peer-$i.err"
done
