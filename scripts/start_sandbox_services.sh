#!/usr/bin/env bash
# What the sandbox backends need, installed and started: bubblewrap, a Docker engine, and the
# docker backend's image (built locally; rebuilt only when its recipe changes). Needs root.
# Usage: scripts/start_sandbox_services.sh PATH_TO_GYMHUB_CLI
set -euo pipefail
GYMHUB=${1:-gymhub}
need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]} from Debian ..." >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >&2
fi
if ! docker info >/dev/null 2>&1; then
  echo "starting dockerd ..." >&2
  nohup dockerd >/tmp/gymhub-dockerd.log 2>&1 &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
fi
docker info >/dev/null 2>&1 || { echo "dockerd did not start: see /tmp/gymhub-dockerd.log" >&2; exit 1; }
"$GYMHUB" sandbox build-image >&2
