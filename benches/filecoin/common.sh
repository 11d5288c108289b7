# Sourced by h200.sh and sizes.sh: the machine's cache folders, the staged
# binaries unpacked, what the machine is, and `timed`.
OUT=${OUT:-/tmp/fil-bench-out}
mkdir -p "$OUT"
export ZKPIPE_PLUGIN_PATH=$PWD/.gpu
export FIL_PROOFS_PARAMETER_CACHE=/tmp/fil-params
export FIL_PROOFS_PARENT_CACHE=/tmp/fil-parents
export ZKPIPE_CACHE_DIR=/tmp/zkpipe-cache
for f in .gpu/*.xz; do [ -e "$f" ] && xz -df "$f" && chmod +x "${f%.xz}"; done
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
# Wall time and peak RSS (GNU time when the machine has it).
timed() { if [ -x /usr/bin/time ]; then /usr/bin/time -v "$@"; else local t=$SECONDS; "$@"; echo "Elapsed (wall clock): $((SECONDS - t)) s" >&2; fi; }
