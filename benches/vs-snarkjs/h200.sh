#!/usr/bin/env bash
# zkpipe (CUDA and CPU backends) against snarkjs on the same circuit files,
# on one machine, in one run: the device tool's H200, where there is no
# node and no circom. Files: benches/vs-snarkjs/gen_chain.py's squaring
# chain (N constraints), keys from `zkpipe setup --r1cs --zkey` (snarkjs's
# zkey layout, no powers of tau). Expects .gpu/ (zkpipe + plugins, from
# ../shared/gpu/stage.sh) and .gpu-node/ (node.xz: node 20's binary;
# snarkjs.tar.xz: snarkjs 0.7.6's node_modules without tests). Logs and
# timings go to $OUT.
set -uo pipefail
N=${1:-1048573}
SNARKJS_RUNS=${2:-2}
REPO=$PWD
OUT=${OUT:-/tmp/out}
W=/tmp/vs-snarkjs
mkdir -p "$W" /tmp/nodeenv "$OUT"
python3 - "$REPO" <<'PY'
import lzma, os, shutil, sys, tarfile
r = sys.argv[1]
with lzma.open(r + "/.gpu-node/node.xz") as s, open("/tmp/nodeenv/node", "wb") as d:
    shutil.copyfileobj(s, d)
os.chmod("/tmp/nodeenv/node", 0o755)
with tarfile.open(r + "/.gpu-node/snarkjs.tar.xz", "r:xz") as t:
    t.extractall("/tmp/nodeenv")
PY
export ZKPIPE_PLUGIN_PATH=$REPO/.gpu
Z=$REPO/.gpu/zkpipe
SJ=(/tmp/nodeenv/node --max-old-space-size=100000 /tmp/nodeenv/node_modules/snarkjs/build/cli.cjs)
TIMEFORMAT='WALL %R s'
log() { echo "== $*"; }
{
  log "machine"; nproc; nvidia-smi -L; /tmp/nodeenv/node --version
  log "generate N=$N"; time python3 benches/vs-snarkjs/gen_chain.py "$N" "$W/chain"
  log "zkpipe setup --zkey"; time "$Z" setup --r1cs "$W/chain.r1cs" --zkey "$W/chain.zkey" --seed 1
  "$Z" export-vk --zkey "$W/chain.zkey" --out "$W/vk.json"
  ls -la "$W"
  for b in cuda cuda cuda cpu; do
    log "zkpipe prove --backend $b"
    time "$Z" prove --backend "$b" --r1cs "$W/chain.r1cs" --wtns "$W/chain.wtns" \
      --zkey "$W/chain.zkey" --proof "$W/zk.$b.json" --public "$W/zkpub.$b.json" --seed 7
    "${SJ[@]}" groth16 verify "$W/vk.json" "$W/zkpub.$b.json" "$W/zk.$b.json"
  done
  # The same r, s on both backends: the same proof, byte for byte.
  cmp "$W/zk.cuda.json" "$W/zk.cpu.json" && echo "CUDA proof == CPU proof (same seed)"
  for i in $(seq "$SNARKJS_RUNS"); do
    log "snarkjs groth16 prove ($i)"
    time "${SJ[@]}" groth16 prove "$W/chain.zkey" "$W/chain.wtns" "$W/sj$i.json" "$W/sjpub$i.json"
    "${SJ[@]}" groth16 verify "$W/vk.json" "$W/sjpub$i.json" "$W/sj$i.json"
    "$Z" verify --vk "$W/vk.json" --proof "$W/sj$i.json" --public "$W/sjpub$i.json"
  done
} 2>&1 | tee "$OUT/vs-snarkjs.log"
