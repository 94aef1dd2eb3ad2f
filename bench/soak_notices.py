#!/usr/bin/env python3
"""The soak's exchange side for notices (bench/run_soak.sh): bids on its own requests and sends
each bid's notices as an exchange would, and the hostile ones an exchange or an attacker sends.

Each bid gets one fate, drawn from a seeded generator (same seed, same sequence of fates):
  60% billing at a clearing price between half and all of the bid price (charged);
  10% billing sent twice (charged once, the second counted "duplicate");
  10% billing sent after the billing window (refused, "late");
  10% loss notice (the reservation is released);
   5% billing with an altered signature (refused 403, "forged");
   5% nothing (the reservation expires).
A bid of an advertiser whose budget is spent is not made, so every on-time billing has its
reservation and is charged. At the end it writes what the bidder must show: billing results
by kind and the spend per advertiser in micros, the sum of the charged clearing prices.

Usage: soak_notices.py PORT BODY SECONDS WINDOW_MS SEED OUT_JSON
"""
import collections
import http.client
import json
import random
import sys
import time
from decimal import Decimal


def main():
    port, body_path, seconds, window_ms, seed, out = sys.argv[1:7]
    port, seconds, window_ms, seed = int(port), float(seconds), int(window_ms), int(seed)
    rng = random.Random(seed)
    with open(body_path) as f:
        request = json.load(f)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def get(path):
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        return r.status

    # (UTC day of the bid, advertiser id) -> micros the bidder must have booked: a billing is
    # booked on its bid's day, so a run across midnight books on two days.
    spend = collections.Counter()
    expect = collections.Counter()  # billing result -> count the bidder must report
    statuses = collections.Counter()
    late = collections.deque()  # (due, url): billings held past the window
    n = 0
    start = time.time()
    while time.time() - start < seconds:
        n += 1
        request["id"] = "soak-%d-%d" % (seed, n)
        conn.request("POST", "/openrtb2/bid", json.dumps(request),
                     {"Content-Type": "application/json"})
        r = conn.getresponse()
        data = r.read()
        statuses["bid %d" % r.status] += 1
        if r.status == 200:
            for seat in json.loads(data)["seatbid"]:
                for bid in seat["bid"]:
                    adv = int(bid["cid"])
                    burl = bid["burl"][bid["burl"].index("/notice/"):]
                    lurl = bid["lurl"][bid["lurl"].index("/notice/"):]
                    clear = Decimal(bid["price"]) * Decimal(rng.uniform(0.5, 1.0))
                    clear = clear.quantize(Decimal("0.000001"))
                    url = burl.replace("${AUCTION_PRICE}", str(clear))
                    micros = int(clear * 1000000)
                    charge = (micros + 500) // 1000  # the bidder's CPM -> one impression
                    ts = int(burl.split("ts=", 1)[1].split("&", 1)[0])
                    key = (ts // 86400000, adv)
                    fate = rng.random()
                    if fate < 0.6:
                        statuses["billing %d" % get(url)] += 1
                        expect["applied"] += 1
                        spend[key] += charge
                    elif fate < 0.7:
                        statuses["billing %d" % get(url)] += 1
                        statuses["duplicate %d" % get(url)] += 1
                        expect["applied"] += 1
                        expect["duplicate"] += 1
                        spend[key] += charge
                    elif fate < 0.8:
                        late.append((time.time() + window_ms / 1000.0 + 2.0, url))
                        expect["late"] += 1
                    elif fate < 0.9:
                        statuses["loss %d" % get(lurl.replace("${AUCTION_LOSS}", "102")
                                                  .replace("${AUCTION_PRICE}", str(clear)))] += 1
                    elif fate < 0.95:
                        sig = url.index("sig=") + 4
                        forged = url[:sig] + ("0" if url[sig] != "0" else "1") + url[sig + 1:]
                        statuses["forged %d" % get(forged)] += 1
                        expect["forged"] += 1
        while late and late[0][0] <= time.time():
            statuses["late %d" % get(late.popleft()[1])] += 1
    # The billings still held: sent when due (the window after the last bid).
    while late:
        time.sleep(max(0.0, late[0][0] - time.time()))
        statuses["late %d" % get(late.popleft()[1])] += 1
    result = {"requests": n, "statuses": dict(statuses), "billing": dict(expect),
              "spend_micros": {"%d/%d" % k: v for k, v in sorted(spend.items())}}
    with open(out, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
