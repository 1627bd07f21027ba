#!/usr/bin/env bash
# Writes the hash-pinned locks of flexq's fallback image and in-cluster install:
#   src/flexq/cli/deploy/requirements.txt  the core dependencies of pyproject.toml (no extras), every file's hash
#   deploy/build-requirements.txt          what the Dockerfile's build stage builds the wheel with
# Run it after changing [project] dependencies or [build-system] requires (tests/cli/test_fallback_image.py
# checks that the lock covers the dependencies).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q pip-tools==7.6.2
compile() {  # compile OUT INPUT HEADER...: INPUT is a file name in $work (so the "via" comments name it alone)
  local out=$1 in=$2
  shift 2
  (cd "$work" && "$work/venv/bin/pip-compile" --quiet --generate-hashes --allow-unsafe --strip-extras \
    --no-emit-index-url --no-emit-find-links --no-header --output-file=out.txt "$in")
  { printf '%s\n' "$@"; cat "$work/out.txt"; } > "$out"
}
cp pyproject.toml "$work/pyproject.toml"
compile src/flexq/cli/deploy/requirements.txt pyproject.toml \
  "# flexq's core dependencies, each pinned with the hashes of its files (every platform PyPI has), for the" \
  "# fallback image (Dockerfile) and the fallback's in-cluster install (flexq fallback manifests --package)." \
  "# Written by tools/lock-fallback.sh from pyproject.toml's [project] dependencies; do not edit by hand."
printf 'setuptools>=68\nwheel\n' > "$work/build.in"
compile deploy/build-requirements.txt build.in \
  "# What the Dockerfile's build stage builds flexq's wheel with (pyproject.toml's [build-system] requires)," \
  "# pinned with hashes. Written by tools/lock-fallback.sh; do not edit by hand."
