#!/bin/sh
# Stand-ins for the two base images docker-compose.yml names, for a Docker engine that cannot pull
# them (no registry reachable). Built from Debian's own packages, through the apt mirror this host
# uses, with debootstrap:
#   python:3.11-slim  Debian bookworm's python3 (3.11) with pip and venv, `python` and `pip` on PATH
#   postgres:16       Debian bookworm's PostgreSQL (15), with an entrypoint that honours
#                     POSTGRES_USER, POSTGRES_PASSWORD and POSTGRES_DB as the official image does
# An image of either name that is already there (pulled, or built by an earlier run) is kept.
#   sudo docker/offline/standin-images.sh [MIRROR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
mirror=${1:-$(sed -n 's/^URIs: *\([^ ]*\/debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)}
mirror=${mirror:-http://deb.debian.org/debian}
cache=${SLURMLET_STANDIN_CACHE:-/var/cache/slurmlet-standin}

have() { docker image inspect "$1" >/dev/null 2>&1; }
pulled() { timeout 60 docker pull -q "$1" >/dev/null 2>&1; }

need=""
for image in python:3.11-slim postgres:16; do
  have "$image" || pulled "$image" || need="$need $image"
done
[ -n "$need" ] || exit 0

if ! have slurmlet-standin:bookworm; then
  mkdir -p "$cache"
  if [ ! -s "$cache/bookworm.tar" ]; then
    root=$(mktemp -d "$cache/root.XXXXXX")
    debootstrap --variant=minbase \
      --include=python3,python3-pip,python3-venv,python-is-python3,postgresql,procps,iproute2 \
      bookworm "$root" "$mirror" >"$cache/debootstrap.log" 2>&1 \
      || { tail -n 20 "$cache/debootstrap.log" >&2; rm -rf "$root"; exit 1; }
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    tar -C "$root" -cf "$cache/bookworm.tar.part" . && mv "$cache/bookworm.tar.part" "$cache/bookworm.tar"
    rm -rf "$root"
  fi
  docker import "$cache/bookworm.tar" slurmlet-standin:bookworm >/dev/null
fi

for image in $need; do
  case $image in
    python:*) dir=python ;;
    postgres:*) dir=postgres ;;
  esac
  docker build -q -t "$image" "$here/standin/$dir" >/dev/null
  echo "built a stand-in for $image from Debian bookworm" >&2
done
