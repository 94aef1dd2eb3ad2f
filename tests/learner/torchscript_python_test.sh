#!/usr/bin/env bash
# The exported actors load in Python's torch.jit.load and give the C++ outputs.
set -eu
LEARNER=$1
SRC=$2
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
$PY -c "import torch" || { echo "FAIL: python3-torch is not installed (scripts/setup.sh installs it)"; exit 1; }
"$LEARNER" train --config "$SRC/tests/learner/tiny_learner.yaml" --algo dcmab --out "$T/out" --quiet >/dev/null
$PY - "$T/out/dcmab/seed0/actors" <<'PY'
import json, sys, torch
d = sys.argv[1]
ref = json.load(open(f"{d}/reference_io.json"))
x = torch.tensor([ref["input"]], dtype=torch.float32)
for i, want in enumerate(ref["outputs"]):
    m = torch.jit.load(f"{d}/actor_{i}.pt")
    got = m(x).item()
    assert abs(got - want) < 1e-5, (i, got, want)
    assert m(torch.zeros(4, x.shape[1])).shape == (4, 1)
print(f"python torch.jit.load: {len(ref['outputs'])} actors match C++")
PY
