#!/usr/bin/env python3
"""Checks a running bidder the way an exchange sees it.

Usage: openrtb_check.py HOST PORT PATH DIR [DIR...]
  e.g. openrtb_check.py 127.0.0.1 8080 /openrtb2/bid tests/fixtures/openrtb/2.6

1. Every bid-request-*.json (any *.json not named bid-response-*) in the DIRs is POSTed over
   one keep-alive connection (reopened if the server closes it). Each answer must be 200 with
   a BidResponse whose id echoes the request, whose bids name an impression of the request and
   bid a positive price at or above that impression's floor; or 204 (no bid); or 400.
2. Hostile bodies follow (truncated, not JSON, empty, wrong types, a 100,000-deep array, 8 MB,
   a NUL byte). Each must be refused with a 4xx (a 204 for a request without impressions is
   a no-bid, also fine), never a 2xx bid or a 5xx; a 400 must say why in its body or in an
   x-rtb-error header. The server may close the connection on an oversized body.
3. The server must still answer a valid request afterwards.

Prints one line per problem (at most 10) and a summary; exit status 0 when all is well.
"""
import http.client
import json
import os
import socket
import sys
import time


class Client:
    def __init__(self, host, port, path):
        self.host, self.port, self.path = host, port, path
        self.conn = None

    def post(self, body):
        """Returns (status, headers dict, body bytes), or (None, {}, b"") if no answer."""
        for attempt in (1, 2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(self.host, self.port, timeout=5)
                    self.conn.connect()
                    self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.conn.request("POST", self.path, body=body,
                                  headers={"Content-Type": "application/json",
                                           "x-openrtb-version": "2.6"})
                r = self.conn.getresponse()
                data = r.read()
                headers = {k.lower(): v for k, v in r.getheaders()}
                if headers.get("connection", "").lower() == "close":
                    self.close()
                return r.status, headers, data
            except (http.client.HTTPException, OSError):
                self.close()
                if attempt == 2:
                    return None, {}, b""
        return None, {}, b""

    def close(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except OSError:
                pass
        self.conn = None


def floor(imp):
    try:
        return float(imp.get("bidfloor", 0) or 0)
    except (TypeError, ValueError):
        return 0.0


def check_bid_response(name, req, data):
    """Problems with a 200 answer to req."""
    problems = []
    try:
        resp = json.loads(data)
    except ValueError as e:
        return [f"{name}: 200 with a body that is not JSON ({e})"]
    if not isinstance(resp, dict):
        return [f"{name}: 200 with a body that is not an object"]
    seatbids = resp.get("seatbid") or []
    if seatbids and resp.get("id") != req.get("id"):
        problems.append(f"{name}: response id {resp.get('id')!r} != request id {req.get('id')!r}")
    imps = {i.get("id"): i for i in req.get("imp", []) if isinstance(i, dict)}
    for sb in seatbids:
        for b in sb.get("bid", []) or []:
            imp = imps.get(b.get("impid"))
            if imp is None:
                problems.append(f"{name}: bid for impid {b.get('impid')!r}, not in the request")
                continue
            price = float(b.get("price", -1))
            if price <= 0 or price + 1e-9 < floor(imp):
                problems.append(f"{name}: price {price} against floor {floor(imp)}")
            if not b.get("id"):
                problems.append(f"{name}: a bid without an id")
    return problems


def main(argv):
    if len(argv) < 5:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    host, port, path, dirs = argv[1], int(argv[2]), argv[3], argv[4:]
    client = Client(host, port, path)
    files = sorted(os.path.join(d, f) for d in dirs for f in os.listdir(d)
                   if f.endswith(".json") and not f.startswith("bid-response"))
    if not files:
        print("no request files in " + " ".join(dirs), file=sys.stderr)
        return 2
    statuses, problems, latencies = {}, [], []
    for fn in files:
        name = os.path.basename(os.path.dirname(fn)) + "/" + os.path.basename(fn)
        raw = open(fn, "rb").read()
        req = json.loads(raw)
        t0 = time.perf_counter()
        status, _, data = client.post(raw)
        latencies.append(time.perf_counter() - t0)
        statuses[status] = statuses.get(status, 0) + 1
        if status == 200:
            problems += check_bid_response(name, req, data)
        elif status not in (204, 400):
            problems.append(f"{name}: status {status}")

    hostile = {
        "truncated": b'{"id":"x","imp":[{"id":"1","banner":{"w":300',
        "not-json": b"hello there",
        "empty": b"",
        "wrong-types": b'{"id":5,"imp":"nope"}',
        "depth-bomb": b"[" * 100000 + b"]" * 100000,
        "oversized": b'{"id":"x","pad":"' + b"a" * (8 * 1024 * 1024) + b'"}',
        "no-imp": b'{"id":"x"}',
        "nul-byte": b'{"id":"x\x00","imp":[{"id":"1"}]}',
    }
    refused = 0
    for name, body in hostile.items():
        status, headers, data = client.post(body)
        if status is None:  # closed on an oversized body: allowed, checked by "alive" below
            refused += 1
        elif status == 204 and name == "no-imp":
            refused += 1
        elif 400 <= status < 500:
            refused += 1
            if status == 400 and not data.strip() and "x-rtb-error" not in headers:
                problems.append(f"hostile {name}: 400 without a reason (body or x-rtb-error)")
        else:
            problems.append(f"hostile {name}: status {status}")
    status, _, _ = client.post(open(files[0], "rb").read())
    alive = status is not None and status < 500
    if not alive:
        problems.append(f"not answering after the hostile bodies (status {status})")

    latencies.sort()
    p50 = latencies[len(latencies) // 2] * 1e3
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1e3
    for p in problems[:10]:
        print(p)
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items(), key=lambda kv: str(kv[0])))
    print(f"{len(files)} requests ({summary}); {len(problems)} problems; hostile "
          f"{refused}/{len(hostile)} refused; alive after: {alive}; "
          f"client p50 {p50:.2f} ms, p99 {p99:.2f} ms")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
