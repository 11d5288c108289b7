#!/usr/bin/env bash
# Run from the repo root on the device machine with .gpu/ staged (../shared/gpu/stage.sh).
# circom jobs through `zkpipe serve` on CUDA at 2^20: key resident after the first job.
set -uo pipefail
REPO=$PWD; OUT=${OUT:-/tmp/out}; W=/tmp/d20; mkdir -p $W/circom $OUT
export ZKPIPE_PLUGIN_PATH=$REPO/.gpu; Z=$REPO/.gpu/zkpipe
TIMEFORMAT='WALL %R s'
{
python3 benches/vs-snarkjs/gen_chain.py 1048573 $W/circom/chain
time $Z setup --r1cs $W/circom/chain.r1cs --zkey $W/circom/chain.zkey --seed 1 2>&1 | tail -1
$Z export-vk --zkey $W/circom/chain.zkey --out $W/vk.json
$Z serve --backend cuda --socket $W/s.sock --circom-dir $W/circom --keys-dir $W/keys --set daemon.max_message_bytes=67108864 --set logging.level=warn > $W/serve.log 2>&1 &
SPID=$!
for i in $(seq 900); do [ -S $W/s.sock ] && break; sleep 0.2; done; echo "serve ready after $((i/5)) s"
cd $W
echo '== client-side zkey hash'; time sha256sum circom/chain.zkey
for i in 1 2 3 4 5; do
  echo "== client prove $i"
  time $Z client --addr unix:$W/s.sock prove --zkey $W/circom/chain.zkey --wtns $W/circom/chain.wtns --proof p$i.json --public pub$i.json
  $Z verify --vk vk.json --proof p$i.json --public pub$i.json
done
$Z client --addr unix:$W/s.sock status
$Z client --addr unix:$W/s.sock metrics | grep -E "stage_seconds_(sum|count)|key_load_seconds_sum|job_latency_seconds_(sum|count)"
kill $SPID; wait $SPID; echo serve exit $?; tail -5 $W/serve.log
} 2>&1 | tee $OUT/daemon20.log
