"""RLB's dynamic program and replay loop as the paper's released code runs them
(github.com/han-cai/rlb-dp, RLB_DP_I: calc_m_pdf, the value function with its early stop,
bid() and run(); docs/replay.md section 2), transcribed to plain Python as the reference for
`rtb replay --strategy rlb`: the same log must give the same totals.
Usage: rlb_dp.py <log> <campaign.json> [c0] [N] [max_bid]
Prints one JSON object: auctions, impressions, clicks, cost, dp_seconds, seconds."""
import json
import sys
import time

UP_PRECISION = 1e-10


def market_pdf(counter, laplace=1):
    total = sum(counter)
    return [(c + laplace) / (total + len(counter) * laplace) for c in counter]


def value_function(N, B, max_bid, m_pdf, theta_avg, v1=1, v0=0, gamma=1):
    rows = []
    V = [0] * (B + 1)
    nV = [0] * (B + 1)
    V_max = 0
    V_inc = 0
    a_max = min(int(v1 * theta_avg / v0), max_bid) if v0 != 0 else max_bid
    for b in range(0, a_max + 1):
        V_inc += m_pdf[b] * (v1 * theta_avg - v0 * b)
    for n in range(1, N):
        a = [0] * (B + 1)
        bb = B - 1
        for b in range(B, 0, -1):
            while bb >= 0 and gamma * (V[bb] - V[b]) + v1 * theta_avg - v0 * (b - bb) >= 0:
                bb -= 1
            a[b] = min(max_bid, b) if bb < 0 else min(max_bid, b - bb - 1)
        rows.append(V[:])
        V_max = gamma * V_max + V_inc
        for b in range(1, B + 1):
            nV[b] = gamma * V[b]
            for delta in range(0, a[b] + 1):
                nV[b] += m_pdf[delta] * (v1 * theta_avg + gamma * (V[b - delta] - V[b]) - v0 * delta)
            if abs(nV[b] - V_max) < UP_PRECISION:
                for bb in range(b + 1, B + 1):
                    nV[bb] = V_max
                break
        V = nV[:]
    rows.append(V[:])
    return rows


def bid(V, n, b, theta, max_bid, v1=1, v0=0, gamma=1):
    a = 0
    for delta in range(1, min(b, max_bid) + 1):
        if v1 * theta + gamma * (V[n - 1][b - delta] - V[n - 1][b]) - v0 * delta >= 0:
            a = delta
        else:
            break
    return a


def main():
    t0 = time.time()
    log, info_path = sys.argv[1], sys.argv[2]
    c0 = float(sys.argv[3]) if len(sys.argv) > 3 else 1 / 32
    N = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
    max_bid = int(sys.argv[5]) if len(sys.argv) > 5 else 300
    info = json.load(open(info_path))
    cpm = info["cost_train"] / info["imp_train"]
    theta_avg = info["clk_train"] / info["imp_train"]
    B = int(cpm * c0 * N)
    V = value_function(N, B, max_bid, market_pdf(info["price_counter_train"]), theta_avg)
    dp_seconds = time.time() - t0
    auctions = imps = clks = cost = 0
    n, b = N, B
    with open(log) as f:
        for line in f:
            click, price, theta = line.split()
            click, price, theta = int(click), int(price), float(theta)
            a = bid(V, n, b, theta, max_bid)
            a = min(int(a), min(b, max_bid))
            if a >= price:
                imps += 1
                clks += click
                b -= price
                cost += price
            n -= 1
            auctions += 1
            if n == 0:
                n, b = N, B
    print(json.dumps({"auctions": auctions, "impressions": imps, "clicks": clks, "cost": cost,
                      "B": B, "dp_seconds": round(dp_seconds, 4),
                      "seconds": round(time.time() - t0, 4)}))


if __name__ == "__main__":
    main()
