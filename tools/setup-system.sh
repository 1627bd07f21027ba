#!/usr/bin/env bash
# System packages the test suite needs beyond Python: headless Chromium and its WebDriver (the dashboard and
# the simulate report are tested in a real browser). Installed from Debian's packages when missing; a machine
# where they cannot be installed (no root) still runs the suite, and the browser tests say why they skip.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"
else echo "setup-system: cannot install ${need[*]} (not root); the browser tests will be skipped" >&2; exit 0; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >/dev/null
$SUDO apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
echo "setup-system: installed ${need[*]}"
