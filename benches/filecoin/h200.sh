#!/usr/bin/env bash
# PoRep C2 and a SnapDeals update for a 2 KiB sector on one machine, one
# run: zkpipe (CUDA and CPU backends), filecoin-proofs' own provers on the
# CPU (bellperson 0.27) and, when staged, on SupraSeal's CUDA prover — the
# same inputs and the same parameters for all.
#
# Staged by ../shared/gpu/stage.sh into .gpu/: zkpipe, the backend plugins,
# c2_peer (`cargo build --release --example c2_peer -p zkpipe-filecoin
# --features testing`) and optionally c2_peer_supraseal
# (benches/filecoin/build-supraseal-peer.sh); `xz` large ones to travel
# (34 MB -> 7 MB), they are unpacked here.
# Usage: bash benches/filecoin/h200.sh [RUNS]
set -euo pipefail
RUNS=${1:-3}
source "$(dirname "$0")/common.sh"
work=/tmp/fil-sector
rm -rf "$work" && mkdir -p "$work"
peers=(./.gpu/c2_peer)
[ -x ./.gpu/c2_peer_supraseal ] && peers+=(./.gpu/c2_peer_supraseal)

timed ./.gpu/zkpipe filecoin params --sector-size 2KiB --proofs porep,snap-update 2> "$OUT/params.err"
grep -E "made|Elapsed|Maximum resident" "$OUT/params.err"
ids=$(./.gpu/c2_peer seal "$work")
echo "$ids"
prover=$(echo "$ids" | awk '{print $2}')
c1=$work/c1.json
read -r r_old r_new d_new < "$work/snap.comms" || true  # no final newline

# Each prover proves RUNS times in one process: run 1 pays the key load and
# the device's first use (a one-shot command), later runs what a resident
# key costs (zkpipe serve; filecoin-proofs' in-memory parameter cache).
for backend in cuda cpu; do
  timed ./.gpu/zkpipe filecoin seal-commit --c1 "$c1" --sector-id 42 \
    --prover-id "$prover" --backend "$backend" --runs "$RUNS" --out "$OUT/proof-$backend.bin" \
    2> "$OUT/c2-$backend.err"
  echo "zkpipe $backend C2:"
  grep -E "partition|seal-commit|Elapsed|Maximum resident" "$OUT/c2-$backend.err"
  timed ./.gpu/zkpipe filecoin snap-update --vanilla "$work/snap.json" \
    --comm-r-old "$r_old" --comm-r-new "$r_new" --comm-d-new "$d_new" \
    --sector-size 2KiB --backend "$backend" --runs "$RUNS" --out "$OUT/snap-$backend.bin" \
    2> "$OUT/snap-$backend.err"
  echo "zkpipe $backend snap:"
  grep -E "partition|snap-update|Elapsed" "$OUT/snap-$backend.err"
done
for peer in "${peers[@]}"; do
  name=$(basename "$peer")
  timed "$peer" c2 "$c1" 42 "$prover" "$RUNS" 2> "$OUT/peer-$name.err"
  grep -E "Elapsed|Maximum resident" "$OUT/peer-$name.err"
  timed "$peer" snap "$work" "$RUNS" 2> "$OUT/peer-snap-$name.err"
  grep -E "Elapsed" "$OUT/peer-snap-$name.err"
done
