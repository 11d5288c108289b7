#!/usr/bin/env bash
# BN254 Groth16 on the CPU, side by side on the same files in one run:
# zkpipe (CPU backend), rapidsnark, ark-groth16 and snarkjs. The circuit is
# gen_chain.py's squaring chain over BN254's field (N constraints), its key
# from `zkpipe setup --zkey` (snarkjs's zkey layout, no ceremony). Every
# proof is checked with `zkpipe groth16 verify`; wall time and peak RSS
# from /usr/bin/time.
#
# usage: ZKPIPE=target/release/zkpipe RAPIDSNARK=/path/to/prover \
#        [ARK=/path/to/ark-prover] [SNARKJS=/path/to/snarkjs] \
#        [BACKENDS="cpu cuda"] benches/vs-rapidsnark/run.sh N [RUNS] [WORKDIR]
# rapidsnark is not built by this repository: pass the path of a `prover`
# binary built from iden3/rapidsnark. ARK is arkworks' Groth16 through
# ark-circom (its own workspace, kept out of zkpipe's), built with
#   cargo build --release --manifest-path benches/vs-rapidsnark/ark-prover/Cargo.toml
# (then ARK=benches/vs-rapidsnark/ark-prover/target/release/ark-prover).
# Without ARK, ark-groth16 is skipped; without SNARKJS, snarkjs is skipped.
# BACKENDS lists zkpipe's backends to run in each round (default: cpu).
set -uo pipefail
N=${1:?constraints}
RUNS=${2:-3}
W=${3:-/tmp/vs-rapidsnark}
HERE=$(cd "$(dirname "$0")" && pwd)
Z=${ZKPIPE:?path of the zkpipe binary}
RS=${RAPIDSNARK:?path of rapidsnark\'s prover}
mkdir -p "$W"
log() { echo "== $*"; }
# "<wall s> <peak MiB>" of a command; its own output goes to $W/last.log.
# Without GNU time (a bare machine), wall time only.
timed() {
  local rc
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%e %M" -o "$W/time.txt" "$@" > "$W/last.log" 2>&1
    rc=$?
    read -r wall kb < <(tail -1 "$W/time.txt")
    echo "rc=$rc wall_s=$wall peak_mib=$((kb / 1024))"
  else
    local t0; t0=$(date +%s%N)
    "$@" > "$W/last.log" 2>&1
    rc=$?
    echo "rc=$rc wall_s=$(( ($(date +%s%N) - t0) / 1000000 ))e-3 peak_mib=?"
  fi
  [ $rc -eq 0 ] || tail -5 "$W/last.log"
}
check() {
  "$Z" groth16 verify "$W/vk.json" "$1" "$2" > /dev/null 2>&1 && echo "   verified" || echo "   NOT VERIFIED"
}
log "machine: $(nproc) threads, $(uname -m), $(date -u +%FT%TZ)"
"$Z" --version
log "generate N=$N"; python3 "$HERE/../vs-snarkjs/gen_chain.py" --bn254 "$N" "$W/chain"
log "zkpipe setup --zkey"; timed "$Z" setup --r1cs "$W/chain.r1cs" --zkey "$W/chain.zkey" --seed 1
"$Z" export-vk --zkey "$W/chain.zkey" --out "$W/vk.json"
ls -la "$W"/chain.*
for i in $(seq "$RUNS"); do
  for b in ${BACKENDS:-cpu}; do
    log "zkpipe groth16 prove ($b backend), run $i"
    timed "$Z" groth16 prove "$W/chain.zkey" "$W/chain.wtns" "$W/zk.json" "$W/zkpub.json" --backend "$b"
    grep -h "proved in" "$W/last.log"   # zkpipe's own split: zkey read, witness to proof
    check "$W/zkpub.json" "$W/zk.json"
  done
  log "rapidsnark prover, run $i"
  timed "$RS" "$W/chain.zkey" "$W/chain.wtns" "$W/rs.json" "$W/rspub.json"
  check "$W/rspub.json" "$W/rs.json"
  if [ -n "${ARK:-}" ]; then
    log "ark-groth16 (ark-circom), run $i"
    timed "$ARK" "$W/chain.zkey" "$W/chain.wtns" "$W/ark.json" "$W/arkpub.json"
    grep -h "ark-groth16:" "$W/last.log"   # its own split: zkey read, witness to proof
    check "$W/arkpub.json" "$W/ark.json"
  fi
done
if [ -n "${SNARKJS:-}" ]; then
  log "snarkjs groth16 prove"
  timed "$SNARKJS" groth16 prove "$W/chain.zkey" "$W/chain.wtns" "$W/sj.json" "$W/sjpub.json"
  check "$W/sjpub.json" "$W/sj.json"
fi
