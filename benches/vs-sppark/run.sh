#!/usr/bin/env bash
# zkpipe's CUDA backend against sppark in one run on one GPU: MSMs (G1
# resident and from host memory, G2 resident) and forward NTTs (on the
# device, NN and NR; host to host, NN) at the same sizes with the same run
# counts, then a table `| op | zkpipe | sppark | ratio |`, ratio = zkpipe ÷ sppark.
#
# Runs ON the GPU machine, from the repo root, with .gpu/ carried:
#   .gpu/zkpipe                     target/release/zkpipe
#   .gpu/libzkpipe_backend_cuda.so  target/release/libzkpipe_backend_cuda.so
#   .gpu/sppark_bench               benches/vs-sppark/build.sh (CURVE=bls12-381)
#   .gpu/sppark_bench_bn254         benches/vs-sppark/build.sh (CURVE=bn254)
# (any of them may travel as NAME.xz; it is unpacked here).
#
# Usage: [CURVE=bn254] benches/vs-sppark/run.sh [OUTDIR]
#   (OUTDIR: default $OUT, else /tmp/vs-sppark)
# CURVE=bls12-381 (default) writes OUTDIR/vs-sppark.md (table and machine),
# OUTDIR/sppark.log and OUTDIR/zkpipe.log (raw output); CURVE=bn254 writes
# OUTDIR/vs-sppark-bn254.md, sppark-bn254.log and zkpipe-bn254.log (no G2).
# Sizes (log2) and runs from the environment:
#   RUNS=5 G1_RESIDENT="16 18 20 22 24" G1_HOST="20 22 24" G2_RESIDENT="16 18 20 22"
#   NTT_NN="20 22 24 26" NTT_NR="24 26" NTT_HOST="24 26"; empty skips an op.
#   NTT_LENT (default: NTT_HOST) times zkpipe's host → host NTT again with
#   its values in memory the backend lent (page-locked, like sppark's).
#   BN254's defaults: G2_RESIDENT (always), NTT_NR and NTT_LENT empty.
# ZKPIPE_COMMIT names zkpipe's commit where the copy has no .git.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
dest=${1:-${OUT:-/tmp/vs-sppark}}
mkdir -p "$dest"
RUNS=${RUNS:-5}
G1_RESIDENT=${G1_RESIDENT-16 18 20 22 24}
G1_HOST=${G1_HOST-20 22 24}
NTT_NN=${NTT_NN-20 22 24 26}
NTT_HOST=${NTT_HOST-24 26}
# Per curve: sppark's binary, zkpipe's curve option, the output names.
CURVE=${CURVE:-bls12-381}
case $CURVE in
  bls12-381)
    sppark_bin=.gpu/sppark_bench curve_args=() curve_name=BLS12-381 tag=
    G2_RESIDENT=${G2_RESIDENT-16 18 20 22}
    NTT_NR=${NTT_NR-24 26}
    NTT_LENT=${NTT_LENT-$NTT_HOST} ;;
  bn254)
    sppark_bin=.gpu/sppark_bench_bn254 curve_args=(--curve bn254) curve_name=BN254 tag=-bn254
    G2_RESIDENT=   # no G2 on this side
    NTT_NR=${NTT_NR-}
    NTT_LENT=${NTT_LENT-} ;;
  *) echo "run.sh: CURVE must be bls12-381 or bn254, not '$CURVE'" >&2; exit 2 ;;
esac

for f in .gpu/*.xz; do [ -e "$f" ] && xz -df "$f" && chmod +x "${f%.xz}"; done
for f in .gpu/zkpipe .gpu/libzkpipe_backend_cuda.so "$sppark_bin"; do
  [ -e "$f" ] || { echo "run.sh: $f is missing (see the header of $0)" >&2; exit 2; }
done
export ZKPIPE_PLUGIN_PATH=$PWD/.gpu
export ZKPIPE_CUDA_CACHE=${ZKPIPE_CUDA_CACHE:-$PWD/.gpu/cuda-cache}
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
echo "GPU: ${gpu:-unknown (no nvidia-smi)}; $(nproc) CPUs; curve $curve_name"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS

# "16 18 20" -> "16,18,20" (sppark_bench) / "16..20" (zkpipe: every size
# between is timed too; the table shows the listed ones).
csv() { local a; read -ra a <<< "$1"; if [ ${#a[@]} -gt 0 ]; then (IFS=,; echo "${a[*]}"); else echo none; fi; }
span() {
  local a s
  read -ra a <<< "$1"
  s=$(printf '%s\n' "${a[@]}" | sort -n)
  echo "$(head -1 <<< "$s")..$(tail -1 <<< "$s")"
}

# Runs a command, its output (stdout and stderr) into $tmp/$1.out and
# appended to a log; records the exit status and the wall time.
logged() {
  local name=$1 log=$2; shift 2
  local t=$SECONDS rc shown="$*"
  shown=${shown#env }   # shown without the `env` that carries variables
  echo "### $shown" >> "$log"
  "$@" > "$tmp/$name.out" 2>&1
  rc=$?
  cat "$tmp/$name.out" >> "$log"
  echo "### exit $rc, $((SECONDS - t)) s" >> "$log"
  echo "- \`$shown\`: exit $rc, $((SECONDS - t)) s" | tee -a "$tmp/status"
  return 0
}

slog=$dest/sppark$tag.log zlog=$dest/zkpipe$tag.log
: > "$slog"; : > "$zlog"

# sppark: G1 and NTTs in one process, G2 in another (a failure in one does
# not lose the other). Checks (against blst; BN254: on the host with
# sppark's host types) run before each family's timings.
logged sppark_main "$slog" "$sppark_bin" --runs "$RUNS" \
  --g1-resident "$(csv "$G1_RESIDENT")" --g1-host "$(csv "$G1_HOST")" --g2-resident none \
  --ntt-nn "$(csv "$NTT_NN")" --ntt-nr "$(csv "$NTT_NR")" --ntt-host "$(csv "$NTT_HOST")"
[ -n "$G2_RESIDENT" ] && logged sppark_g2 "$slog" "$sppark_bin" --runs "$RUNS" \
  --g1-resident none --g1-host none --g2-resident "$(csv "$G2_RESIDENT")" \
  --ntt-nn none --ntt-nr none --ntt-host none

# zkpipe, the same ops. On-device NTT times are the "transform" step of
# ZKPIPE_CUDA_PROFILE's lines (wall clock between stream synchronises, data
# already on the GPU); zkpipe has no transform-only bench of its own.
zbench() {  # NAME [VAR=VALUE...] BENCH-ARGS...
  local name=$1 envs=()
  shift
  while [[ $1 == *=* ]]; do envs+=("$1"); shift; done
  logged "$name" "$zlog" env "${envs[@]}" .gpu/zkpipe bench "$@" "${curve_args[@]}" --backend cuda --runs "$RUNS"
}
[ -n "$G1_RESIDENT" ] && zbench z_g1r msm --resident --log-size "$(span "$G1_RESIDENT")"
[ -n "$G1_HOST" ] && zbench z_g1h msm --log-size "$(span "$G1_HOST")"
[ -n "$G2_RESIDENT" ] && zbench z_g2r msm --group g2 --resident --log-size "$(span "$G2_RESIDENT")"
# Resident sets with precomputed multiples for every window (fixed-base MSM).
[ -n "$G1_RESIDENT" ] && zbench z_g1p msm --resident --backend-opt precompute=auto --log-size "$(span "$G1_RESIDENT")"
[ -n "$G2_RESIDENT" ] && zbench z_g2p msm --group g2 --resident --backend-opt precompute=auto --log-size "$(span "$G2_RESIDENT")"
[ -n "$NTT_NN" ] && zbench z_nttd ZKPIPE_CUDA_PROFILE=1 ntt --order nn --log-size "$(span "$NTT_NN")"
[ -n "$NTT_NR" ] && zbench z_nttr ZKPIPE_CUDA_PROFILE=1 ntt --order nr --log-size "$(span "$NTT_NR")"
[ -n "$NTT_HOST" ] && zbench z_ntth ntt --order nn --log-size "$(span "$NTT_HOST")"
[ -n "$NTT_LENT" ] && zbench z_nttl ntt --order nn --lent --log-size "$(span "$NTT_LENT")"

# ---------------------------------------------------------------- parsing
# Each parser prints "log median_ms" lines.
sppark_rows() {  # OP
  cat "$tmp"/sppark_*.out 2>/dev/null |
    awk -v op="$1" '$1 == "sppark" && $2 == op {
      split($3, l, "="); split($4, m, "="); print l[2], m[2] }'
}
zkpipe_rows() {  # NAME: the table rows `log n median min max runs`
  [ -e "$tmp/$1.out" ] && awk '$1 ~ /^[0-9]+$/ && $2 == 2 ^ $1 && NF >= 6 { print $1, $3 }' "$tmp/$1.out"
}
transform_rows() {  # NAME ORDER: median "transform" of the profile lines, warm-up dropped
  [ -e "$tmp/$1.out" ] || return 0
  awk -v want="$2:" '$1 == "cuda" && $2 == "ntt" && $4 == want && match($0, /transform [0-9.]+/) {
      n = substr($3, 3) + 0; lg = 0; while (2 ^ lg < n) lg++
      if (seen[lg]++) print lg, substr($0, RSTART + 10, RLENGTH - 10) }' "$tmp/$1.out" |
    sort -k1,1n -k2,2g |
    awk '{ v[$1, ++c[$1]] = $2 } END { for (k in c) print k, v[k, int(c[k] / 2) + 1] }' | sort -n
}
value() { awk -v k="$2" '$1 == k { print $2; exit }' <<< "$1"; }

md=$dest/vs-sppark$tag.md
commit=${ZKPIPE_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
dirty=
if git status --porcelain --untracked-files=no 2>/dev/null | grep -q .; then dirty=", with uncommitted changes"; fi
sp_header=$(grep -h -m1 '^sppark_bench: sppark' "$tmp"/sppark_main.out "$tmp"/sppark_g2.out 2>/dev/null | head -1)
z_machine=$(grep -h -m1 '^machine:' "$tmp"/z_*.out 2>/dev/null | head -1)
z_backend=$(grep -h -m1 '^backend:' "$tmp"/z_*.out 2>/dev/null | head -1)
checks_ok=$(cat "$tmp"/sppark_*.out 2>/dev/null | grep -c '^check .* ok$')
checks_bad=$(cat "$tmp"/sppark_*.out 2>/dev/null | grep -c '^check .* FAIL')

{
  echo "# zkpipe vs sppark, $curve_name, one run on one GPU"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- GPU: ${gpu:-unknown (no nvidia-smi)}"
  echo "- host: ${z_machine:+${z_machine#machine: }}"
  echo "- zkpipe: commit $commit$dirty; ${z_backend:-backend line missing}"
  echo "- sppark: ${sp_header#sppark_bench: }"
  echo "- inputs: random bases and scalars; sppark's host inputs pinned (cudaHostAlloc), zkpipe's pageable"
  [ -n "$NTT_LENT" ] &&
    echo "  except in the \"lent memory\" row (page-locked, lent by the plugin: \`bench ntt --lent\`)"
  echo "- timing: $RUNS runs after 1 warm-up (at most 3 where the warm-up took over 5 s), median;"
  echo "  wall clock to a synchronise on both sides"
  if [ "$CURVE" = bn254 ]; then
    echo "- sppark checked on the host (G1 MSM: t·G by double-and-add, from the bases' scalars;"
    echo "  NTT: the DFT by definition): $checks_ok ok, $checks_bad failed"
  else
    echo "- sppark checked against blst: $checks_ok ok, $checks_bad failed"
  fi
  echo
  echo "| op | zkpipe | sppark | ratio |"
  echo "|---|---:|---:|---:|"
  row() {  # LABEL SIZES ZKPIPE_ROWS SPPARK_ROWS
    local k zv sv ratio
    for k in $2; do
      zv=$(value "$3" "$k"); sv=$(value "$4" "$k")
      ratio=$(awk -v a="$zv" -v b="$sv" 'BEGIN { if (a != "" && b != "" && b > 0) printf "%.2f", a / b; else printf "—" }')
      printf '| %s 2^%s | %s | %s | %s |\n' "$1" "$k" "${zv:+$zv ms}" "${sv:+$sv ms}" "$ratio"
    done
  }
  row "G1 MSM resident" "$G1_RESIDENT" "$(zkpipe_rows z_g1r)" "$(sppark_rows g1_msm_resident)"
  row "G1 MSM resident, precomputed" "$G1_RESIDENT" "$(zkpipe_rows z_g1p)" "$(sppark_rows g1_msm_resident)"
  row "G1 MSM bases from host" "$G1_HOST" "$(zkpipe_rows z_g1h)" "$(sppark_rows g1_msm_host)"
  row "G2 MSM resident" "$G2_RESIDENT" "$(zkpipe_rows z_g2r)" "$(sppark_rows g2_msm_resident)"
  row "G2 MSM resident, precomputed" "$G2_RESIDENT" "$(zkpipe_rows z_g2p)" "$(sppark_rows g2_msm_resident)"
  row "NTT forward NN on device" "$NTT_NN" "$(transform_rows z_nttd NN)" "$(sppark_rows ntt_nn_device)"
  row "NTT forward NR on device" "$NTT_NR" "$(transform_rows z_nttr NR)" "$(sppark_rows ntt_nr_device)"
  row "NTT forward NN host → host" "$NTT_HOST" "$(zkpipe_rows z_ntth)" "$(sppark_rows ntt_nn_host)"
  row "NTT forward NN host → host, lent memory" "$NTT_LENT" "$(zkpipe_rows z_nttl)" "$(sppark_rows ntt_nn_host)"
  echo
  echo "ratio = zkpipe ÷ sppark (below 1: zkpipe faster); an empty cell is a failed"
  echo "or skipped run (see the logs)."
  echo
  echo "What each row times:"
  echo "- MSM resident: bases uploaded outside the timing; each call copies its scalars"
  echo "  in and returns the point. zkpipe: \`bench msm --resident\`; sppark: one \`msm_t\`"
  echo "  per size built with that size's bases, \`invoke\` with no bases."
  echo "- MSM resident, precomputed: zkpipe's sets kept with their multiples for every"
  echo "  window (\`--backend-opt precompute=auto\`; the upload, outside the timing, builds"
  echo "  them); sppark's row is the same plain resident MSM as above."
  echo "- MSM bases from host: bases and scalars copied in on every call. zkpipe:"
  echo "  \`bench msm\`; sppark: its one-shot \`mult_pippenger\` (device buffers per call)."
  echo "- NTT on device: transform only, data already on the GPU. zkpipe: the"
  echo "  \`transform\` step of \`ZKPIPE_CUDA_PROFILE=1 bench ntt\` (zkpipe has no"
  echo "  transform-only bench; the profile synchronises around the step);"
  echo "  sppark: \`NTT::Base_dev_ptr\` then a stream synchronise."
  echo "- NTT host → host: zkpipe \`bench ntt\` (pageable in and out); sppark \`NTT::Base\`"
  echo "  (pinned buffer; device buffer, copy in, transform, copy out).${NTT_LENT:+ The lent-memory}"
  [ -n "$NTT_LENT" ] &&
    echo "  row: \`bench ntt --lent\` (values in page-locked memory the plugin lent, as a" &&
    echo "  prover's evaluation vectors are)."
  echo
  echo "Commands (from the repo root, ZKPIPE_PLUGIN_PATH=.gpu), exit status, wall time:"
  echo
  cat "$tmp/status"
} > "$md"
echo
cat "$md"
echo
echo "run.sh: $((SECONDS - start)) s; $md, $slog, $zlog"
