#!/usr/bin/env bash
# The whole test suite: install what is missing, build (release preset), run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release
ctest --preset release
