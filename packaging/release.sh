#!/usr/bin/env bash
# Builds a release archive: zkpipe-VERSION-ARCH-linux.tar.gz (and its
# .sha256) holding the installed layout of packaging/install.sh under one
# folder of that name. Unpack it anywhere; its bin/zkpipe finds the
# backends in its lib/zkpipe.
#
# Usage: packaging/release.sh [OUT_DIR] [--from DIR]
#   OUT_DIR      where the archive goes (default: target/dist)
#   --from DIR   package what is built in DIR instead of building release
#
# Exit codes: 0 written; 1 a build, install or archive step failed; 2 a
# usage error.
set -euo pipefail

usage() {
  sed -n '2,/^$/s/^# \{0,1\}//p' "$0" >&2
  exit 2
}

root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/target/dist"
from_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --from) [ $# -ge 2 ] && [ -n "$2" ] || usage; from_args=(--from "$2"); shift 2 ;;
    -h|--help) usage ;;
    -*) echo "release.sh: unknown argument '$1'" >&2; usage ;;
    *) out=$1; shift ;;
  esac
done

version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1)
name="zkpipe-$version-$(uname -m)-linux"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
"$root/packaging/install.sh" --prefix "$stage/$name" "${from_args[@]}"
cp "$root/README.md" "$stage/$name/"
mkdir -p "$out"
# Written beside, then renamed: a failed run leaves no half archive.
tar -C "$stage" -czf "$out/$name.tar.gz.part" "$name"
mv "$out/$name.tar.gz.part" "$out/$name.tar.gz"
(cd "$out" && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")
echo "wrote $out/$name.tar.gz"
