#!/usr/bin/env bash
# Install Debian's chromium (headless) for the report tests (tests/report) when it is missing,
# and print its path. Needs root for apt-get; a machine that has chromium already needs nothing.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing chromium from Debian ..." >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
fi
command -v chromium
