#!/usr/bin/env bash
# Installs zkpipe under a prefix, in the layout the binary searches:
#
#   PREFIX/bin/zkpipe
#   PREFIX/lib/zkpipe/libzkpipe_backend_*.so   backends (zkpipe looks in ../lib/zkpipe)
#   PREFIX/share/zkpipe/zkpipe.toml            the daemon's config, every key at its default
#   PREFIX/share/zkpipe/zkpipe.service         a systemd unit for `zkpipe serve`
#   PREFIX/share/zkpipe/grafana-dashboard.json the daemon's metrics in Grafana
#   PREFIX/share/man/man1/zkpipe*.1            man pages
#   PREFIX/share/bash-completion/completions/zkpipe
#   PREFIX/share/zsh/site-functions/_zkpipe
#   PREFIX/share/fish/vendor_completions.d/zkpipe.fish
#
# Usage: packaging/install.sh [--prefix DIR] [--from DIR]
#   --prefix DIR  where to install (default: /usr/local)
#   --from DIR    install what is built in DIR (a cargo target folder such as
#                 target/release) instead of running `cargo build --release`
#
# Exit codes: 0 installed; 1 a build or copy failed, or DIR lacks what
# zkpipe needs; 2 a usage error.
set -euo pipefail

usage() {
  sed -n '2,/^$/s/^# \{0,1\}//p' "$0" >&2
  exit 2
}

prefix=/usr/local
from=
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] && [ -n "$2" ] || usage; prefix=$2; shift 2 ;;
    --from) [ $# -ge 2 ] && [ -n "$2" ] || usage; from=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "install.sh: unknown argument '$1'" >&2; usage ;;
  esac
done

root="$(cd "$(dirname "$0")/.." && pwd)"
if [ -z "$from" ]; then
  (cd "$root" && cargo build --release -p zkpipe-cli -p zkpipe-backend-cpu \
    -p zkpipe-backend-cuda -p zkpipe-backend-wgpu)
  from="$root/target/release"
fi
shopt -s nullglob
plugins=("$from"/libzkpipe_backend_*.so)
if [ ! -x "$from/zkpipe" ] || [ ${#plugins[@]} -eq 0 ]; then
  echo "install.sh: $from has no zkpipe binary or no libzkpipe_backend_*.so;" \
    "build them first (cargo build --release) or name another --from" >&2
  exit 1
fi

bin="$prefix/bin"
lib="$prefix/lib/zkpipe"
share="$prefix/share"
install -d "$bin" "$lib" "$share/zkpipe" "$share/man/man1" \
  "$share/bash-completion/completions" "$share/zsh/site-functions" \
  "$share/fish/vendor_completions.d"
install -m 755 "$from/zkpipe" "$bin/zkpipe"
install -m 755 "${plugins[@]}" "$lib/"
install -m 644 "$root/examples/zkpipe.toml" "$share/zkpipe/zkpipe.toml"
sed "s|@BINDIR@|$bin|g" "$root/packaging/zkpipe.service" > "$share/zkpipe/zkpipe.service"
install -m 644 "$root/packaging/grafana-dashboard.json" "$share/zkpipe/grafana-dashboard.json"
chmod 644 "$share/zkpipe/zkpipe.service"
"$bin/zkpipe" man "$share/man/man1"
"$bin/zkpipe" completions bash > "$share/bash-completion/completions/zkpipe"
"$bin/zkpipe" completions zsh > "$share/zsh/site-functions/_zkpipe"
"$bin/zkpipe" completions fish > "$share/fish/vendor_completions.d/zkpipe.fish"
echo "installed zkpipe $("$bin/zkpipe" --version | cut -d' ' -f2-) under $prefix"
echo "backends: $(cd "$lib" && echo libzkpipe_backend_*.so)"
