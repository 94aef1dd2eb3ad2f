#!/usr/bin/env bash
# The main job, end to end on embedded defaults: install what is missing, build, simulate the
# default day under manual bids and write the report to out/simulate/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release
build/release/rtb simulate --config configs/simulator/default.yaml --policy manual --out out/simulate
echo "report: out/simulate/report.html (also .md, .json, .csv)"
