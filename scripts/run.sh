#!/usr/bin/env bash
# The main job, end to end on embedded defaults: install what is missing, build, and run the
# closed loop (rtb demo): embedded Kafka, DCMAB pre-trained offline, a live bidder, the online
# learner and the simulated exchange over 4 simulated days; the report goes to out/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release
build/release/rtb demo --config configs/demo/default.yaml --out out/demo
echo "report: out/demo/report.html (also .md, .json); logs: out/demo/logs/"
