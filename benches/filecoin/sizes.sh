#!/usr/bin/env bash
# PoRep C2 for a sector above 2 KiB (8MiB, 512MiB: the largest a 64 GB
# disk and a 10-minute call allow), one run on one machine: the sector
# sealed here by filecoin-proofs (PC1, PC2, C1 on the CPU), parameters made
# by zkpipe, then zkpipe (CUDA) and, when staged, filecoin-proofs on
# SupraSeal's CUDA prover, on the same C1 and parameters.
#
# Staged as for h200.sh (zkpipe, the CUDA plugin, c2_peer, optionally
# c2_peer_supraseal; large ones xz'd).
# Usage: bash benches/filecoin/sizes.sh SIZE [RUNS]
set -euo pipefail
SIZE=${1:?usage: sizes.sh SIZE [RUNS], e.g. 512MiB}
RUNS=${2:-3}
source "$(dirname "$0")/common.sh"
work=/tmp/fil-sector-$SIZE
rm -rf "$work" && mkdir -p "$work"
df -h /tmp | tail -1

timed ./.gpu/zkpipe filecoin params --sector-size "$SIZE" --proofs porep 2> "$OUT/params-$SIZE.err"
grep -E "made|constraints|Elapsed|Maximum resident" "$OUT/params-$SIZE.err"
ids=$(timed ./.gpu/c2_peer seal "$work" "$SIZE" 2> "$OUT/seal-$SIZE.err")
grep -E "sealed|Elapsed|Maximum resident" "$OUT/seal-$SIZE.err"
echo "$ids"
prover=$(echo "$ids" | awk '{print $2}')
du -sh "$work"

timed ./.gpu/zkpipe filecoin seal-commit --c1 "$work/c1.json" --sector-id 42 \
  --prover-id "$prover" --backend cuda --runs "$RUNS" --out "$OUT/proof-$SIZE.bin" \
  2> "$OUT/c2-cuda-$SIZE.err"
echo "zkpipe cuda C2 $SIZE:"
grep -E "partition|seal-commit|Elapsed|Maximum resident" "$OUT/c2-cuda-$SIZE.err"
if [ -x ./.gpu/c2_peer_supraseal ]; then
  timed ./.gpu/c2_peer_supraseal c2 "$work/c1.json" 42 "$prover" "$RUNS" 2> "$OUT/peer-$SIZE.err"
  grep -E "Elapsed|Maximum resident" "$OUT/peer-$SIZE.err"
fi
