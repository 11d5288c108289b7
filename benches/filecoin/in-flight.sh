#!/usr/bin/env bash
# PoRep C2 with several proofs in flight, one run on one machine: a sector
# sealed here by filecoin-proofs, parameters made by zkpipe, then
#  - zkpipe's daemon (`zkpipe serve`, CUDA backend, default settings) fed
#    through cuzk's gRPC API as Curio feeds it (daemon/examples/cuzk_porep):
#    one proof to load the key, PROOFS one at a time, PROOFS with IN_FLIGHT
#    in flight;
#  - filecoin-proofs on SupraSeal's CUDA prover (when staged) the same way in
#    one process: one proof alone, PROOFS one at a time, PROOFS IN_FLIGHT at
#    a time on threads.
# Every proof is verified (by the daemon before it answers; by
# filecoin-proofs' seal_commit_phase2 for the peer).
#
# Staged into .gpu/ as for sizes.sh, plus the CPU plugin (the daemon keeps
# the CPU reference beside the CUDA backend), cuzk_porep
# (`cargo build --release -p zkpipe-daemon --example cuzk_porep`) and the
# CUDA kernels precompiled into .gpu/cuda-cache.
# A sector sealed elsewhere may travel instead (sealing 512 MiB takes ~5
# minutes of a 16-core machine): SEALED=DIR with DIR/c1.json and DIR/ids.txt
# (what `c2_peer seal` prints).
# Usage: bash benches/filecoin/in-flight.sh [SIZE] [PROOFS] [IN_FLIGHT]
set -euo pipefail
SIZE=${1:-512MiB}
PROOFS=${2:-8}
IN_FLIGHT=${3:-4}
source "$(dirname "$0")/common.sh"
export ZKPIPE_CUDA_CACHE=$PWD/.gpu/cuda-cache
work=/tmp/fil-sector-$SIZE
rm -rf "$work" && mkdir -p "$work"

timed ./.gpu/zkpipe filecoin params --sector-size "$SIZE" --proofs porep 2> "$OUT/params-$SIZE.err"
grep -E "made|Elapsed|Maximum resident" "$OUT/params-$SIZE.err"
if [ -n "${SEALED:-}" ]; then
  cp "$SEALED/c1.json" "$work/c1.json"
  ids=$(cat "$SEALED/ids.txt")
else
  ids=$(timed ./.gpu/c2_peer seal "$work" "$SIZE" 2> "$OUT/seal-$SIZE.err")
  grep -E "sealed|Elapsed|Maximum resident" "$OUT/seal-$SIZE.err"
fi
prover=$(echo "$ids" | awk '{print $2}')
# c2_peer seals for miner 1000, sector 42 (its prover id is miner 1000's).
miner=1000

# The daemon wants a socket folder only its user may write.
sockdir=$(mktemp -d)
sock=$sockdir/zkpipe.sock
./.gpu/zkpipe serve --socket "$sock" --keys-dir "$ZKPIPE_CACHE_DIR" \
  --backend cuda > "$OUT/serve.log" 2> "$OUT/serve.err" &
serve=$!
for _ in $(seq 240); do grep -q "listening unix:" "$OUT/serve.log" 2>/dev/null && break; kill -0 $serve 2>/dev/null || { cat "$OUT/serve.err"; exit 1; }; sleep 0.5; done
echo "zkpipe daemon, $SIZE:"
./.gpu/cuzk_porep "$sock" "$work/c1.json" 42 $miner 1 1 | sed 's/^/  first (key load): /'
./.gpu/cuzk_porep "$sock" "$work/c1.json" 42 $miner "$PROOFS" 1 | sed 's/^/  one at a time: /'
./.gpu/cuzk_porep "$sock" "$work/c1.json" 42 $miner "$PROOFS" "$IN_FLIGHT" | sed "s/^/  $IN_FLIGHT in flight: /"
# What the daemon says bounds it, over its last minute (the in-flight run).
./.gpu/zkpipe client --addr "$sock" status | sed 's/^/  status: /'
grep VmHWM /proc/$serve/status | sed 's/^/  daemon peak RSS: /'
kill -TERM $serve; wait $serve || true

if [ -x ./.gpu/c2_peer_supraseal ]; then
  echo "filecoin-proofs + SupraSeal, $SIZE:"
  timed ./.gpu/c2_peer_supraseal c2 "$work/c1.json" 42 "$prover" "$((PROOFS + 1))" 2> "$OUT/peer-serial.err" | sed 's/^/  one at a time: /'
  grep -E "Maximum resident" "$OUT/peer-serial.err" | sed 's/^/  /'
  timed ./.gpu/c2_peer_supraseal c2 "$work/c1.json" 42 "$prover" "$PROOFS" "$IN_FLIGHT" 2> "$OUT/peer-in-flight.err" | sed "s/^/  $IN_FLIGHT in flight: /"
  grep -E "Maximum resident" "$OUT/peer-in-flight.err" | sed 's/^/  /'
fi
