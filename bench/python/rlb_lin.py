"""The RLB code's Lin-Bid replay loop (github.com/han-cai/rlb-dp, protocol of docs/replay.md
section 2), as a baseline for `rtb replay`: same log, same arithmetic, plain Python.
Usage: rlb_lin.py <log> <campaign.json> <b0> [c0] [N] [max_bid]"""
import json
import sys
import time

t0 = time.time()
log, info_path, b0 = sys.argv[1], sys.argv[2], int(sys.argv[3])
c0 = float(sys.argv[4]) if len(sys.argv) > 4 else 1 / 32
N = int(sys.argv[5]) if len(sys.argv) > 5 else 1000
max_bid = int(sys.argv[6]) if len(sys.argv) > 6 else 300
info = json.load(open(info_path))
cpm = info["cost_train"] / info["imp_train"]
avg_ctr = info["clk_train"] / info["imp_train"]
B = int(cpm * c0 * N)
auctions = imps = clks = cost = 0
with open(log) as f:
    lines = f.readlines()
for start in range(0, len(lines), N):
    b = B
    for line in lines[start:start + N]:
        click, price, pctr = line.split()
        click, price, pctr = int(click), int(price), float(pctr)
        a = int(pctr * b0 / avg_ctr)
        a = min(a, max_bid)
        a = min(a, b)
        auctions += 1
        if a >= price:
            imps += 1
            clks += click
            b -= price
            cost += price
print(json.dumps({"auctions": auctions, "impressions": imps, "clicks": clks, "cost": cost,
                  "seconds": round(time.time() - t0, 4)}))
