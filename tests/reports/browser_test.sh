#!/usr/bin/env bash
# Every report kind, opened in headless Chromium (tests/tools/report_browser_check.py): the
# simulate, replay (rlb and full-information), train (a tiny world), demo (the loop test's
# tiny world, one day) and its A/B report (rtb report on the demo's events) must load without
# console errors, carry no absolute path and no Markdown syntax in their text, and label every
# chart's axes. Then no report file (json, csv,
# md, html) of any of them names /tmp/, /root/ or /home/; and the same seed gives the same
# simulate and replay report bytes.
# Usage: browser_test.sh RTB SRC   (Chromium from scripts/setup.sh)
set -euo pipefail
RTB=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
"$RTB" simulate --config "$SRC/configs/simulator/default.yaml" --seed 1 --out simulate --quiet >/dev/null
"$RTB" generate --config "$SRC/configs/simulator/default.yaml" --rlb-out rlb --rlb-lines 20000 >/dev/null
[[ ! -e out/logs ]] || { echo "FAIL: rtb generate --rlb-out also wrote out/logs"; exit 1; }
"$RTB" replay --format rlb --log rlb/test.txt --train-log rlb/train.txt --info rlb/campaign.json \
  --protocol rlb --strategy lin,mcpc --out replay-rlb --quiet >/dev/null
"$RTB" generate --config "$SRC/configs/simulator/default.yaml" --out logs >/dev/null
"$RTB" replay --format full --log logs/test.tsv --train-log logs/train.tsv \
  --config "$SRC/configs/simulator/default.yaml" --out replay-full --quiet >/dev/null
cat >tiny.yaml <<YAML
simulator_config: $SRC/tests/learner/tiny_world.yaml
seeds: 1
episodes: 3
training_days: 1
hyper: {actor_hidden: 64, critic_hidden: 32, updates_per_step: 2, rollouts_per_episode: 1, warmup_transitions: 2, batch_size: 8}
replay: {backend: memory}
YAML
"$RTB" train --config tiny.yaml --algo dcmab --out train --quiet >/dev/null
"$RTB" demo --config "$SRC/tests/loop/demo.yaml" --days 1 --out demo --quiet >/dev/null || {
  echo "rtb demo failed"; tail -20 demo/logs/*.log; exit 1; }

/usr/bin/python3 "$SRC/tests/tools/report_browser_check.py" --screenshot-dir shots \
  simulate replay-rlb replay-full train demo demo/ab

leaks=$(grep -rlE '/tmp/|/root/|/home/' --include='report.*' simulate replay-rlb replay-full train demo || true)
if [[ -n "$leaks" ]]; then
  echo "FAIL: absolute paths in report files:"
  grep -rnoE '.{0,40}(/tmp/|/root/|/home/).{0,40}' $leaks | head -10
  exit 1
fi
echo "ok: no absolute path in any report file"
"$RTB" simulate --config "$SRC/configs/simulator/default.yaml" --seed 1 --out simulate2 --quiet >/dev/null
for f in report.json report.csv report.md report.html; do
  cmp -s "simulate/$f" "simulate2/$f" || { echo "FAIL: simulate $f differs between two runs"; exit 1; }
done
echo "ok: simulate report bytes identical across runs"
