#!/usr/bin/env python3
"""N concurrent POSTs of one JSON body to URL, each with its own client time-out; prints one JSON
line per request: {"i", "code", "body" (parsed or null), "secs", "error"}. Used by traffic.t.
usage: burst.py URL N BODY_JSON [TIMEOUT_S] [HEADER:VALUE ...]"""
import json
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor


def one(i, url, body, timeout, headers):
    t0 = time.time()
    req = urllib.request.Request(url, data=body.encode(), method="POST",
                                 headers={"Content-Type": "application/json", **headers})
    out = {"i": i, "code": 0, "body": None, "secs": 0, "error": None}
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            out["code"] = r.status
            raw = r.read()
    except urllib.error.HTTPError as e:
        out["code"] = e.code
        raw = e.read()
    except Exception as e:  # a client time-out or a reset: what a trainer would lose
        out["error"] = repr(e)
        raw = b""
    out["secs"] = round(time.time() - t0, 3)
    try:
        out["body"] = json.loads(raw) if raw else None
    except ValueError:
        out["body"] = None
    return out


def main():
    url, n, body = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 60
    headers = dict(h.split(":", 1) for h in sys.argv[5:])
    with ThreadPoolExecutor(max_workers=n) as ex:
        for r in ex.map(lambda i: one(i, url, body, timeout, headers), range(n)):
            print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
