#!/usr/bin/env python3
"""Fork benchmark (issue 23): a session builds a large working tree in /work (default 500 MB in
files of 1 MiB), snapshots it, then forks 1 and 16 sessions from the snapshot. Reports the snapshot
time and size, each fork request's latency, host memory and disk use before and after the forks
(the forks share the snapshot as a read-only layer: no per-fork copy), and steps per second in a
fork against a fresh session (a step reads one of the tree's files). Starts a daemon of its own
(bin/paddock serve, a template with room for the tree) unless --url is given.

    python3 scripts/bench-forks.py [--mb 500] [--url URL]"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "clients", "python"))
from paddock_client import Client  # noqa: E402


def meminfo():
    m = {}
    for l in open("/proc/meminfo"):
        k, v = l.split(":")
        m[k] = int(v.split()[0])
    return m


def disk_used(path):
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def start_daemon(tmp):
    tpl = os.path.join(tmp, "templates.json")
    with open(tpl, "w") as f:
        json.dump({"templates": [{"name": "big", "requires": ["bash"], "cwd": "/work",
                                  "limits": {"memory": "3G", "disk": "1G", "wall_time": 120,
                                             "cpu_time": 120}}]}, f)
    log = open(os.path.join(tmp, "daemon.log"), "w+")
    p = subprocess.Popen([os.path.join(REPO, "bin", "paddock"), "serve", "--listen", "127.0.0.1:0", "--db",
                          os.path.join(tmp, "db"), "--templates", tpl], stdout=log, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL)
    for _ in range(300):
        log.seek(0)
        m = re.search(r"serving on (\S+)", log.read())
        if m:
            return p, "http://" + m.group(1)
        time.sleep(0.1)
    p.kill()
    raise SystemExit("daemon did not start")


def steps_per_s(s, n=40):
    t = time.monotonic()
    for i in range(n):
        s.exec("wc -c < /work/tree/f%d" % (i % 8))
    return n / (time.monotonic() - t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=500)
    ap.add_argument("--url")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="pdk-bench-forks-")
    proc = None
    url = a.url
    if not url:
        proc, url = start_daemon(tmp)
    c = Client(url)
    state = os.environ.get("PADDOCK_STATE_DIR", "/var/lib/paddock")
    out = {"tree_mb": a.mb}
    cleanup_ids, snap = [], None
    try:
        src = c.create_session(template="big")
        cleanup_ids.append(src.id)
        t = time.monotonic()
        r = src.exec("mkdir -p /work/tree && for i in $(seq 0 %d); do head -c 1048576 /dev/urandom > /work/tree/f$i; done;"
                     " du -sm /work/tree | cut -f1" % (a.mb - 1), timeout=120)
        out["tree_build_s"] = round(time.monotonic() - t, 2)
        out["tree_mb_in_session"] = int(r["stdout"].strip() or 0)
        t = time.monotonic()
        snap = src.snapshot(name="bench-forks-%d" % os.getpid(), ttl=600, max_bytes=(a.mb + 16) << 20)
        out["snapshot_s"] = round(time.monotonic() - t, 2)
        out["snapshot_bytes"] = snap["bytes"]
        src.close()
        fresh = c.create_session(template="big")
        cleanup_ids.append(fresh.id)
        fresh.exec("mkdir -p /work/tree && for i in $(seq 0 7); do head -c 1048576 /dev/urandom > /work/tree/f$i; done")
        out["steps_per_s_fresh"] = round(steps_per_s(fresh), 1)
        fresh.close()
        for count in (1, 16):
            m0, d0 = meminfo(), disk_used(state)
            t = time.monotonic()
            forks = c.fork(snap["snapshot"], count=count)
            lat = time.monotonic() - t
            cleanup_ids.extend(f.id for f in forks)
            m1, d1 = meminfo(), disk_used(state)
            ok = all(f.exec("wc -c < /work/tree/f%d" % (a.mb - 1))["stdout"].strip() == "1048576" for f in forks)
            row = {"forks": count, "request_s": round(lat, 3), "per_fork_ms": round(lat * 1000 / count, 1),
                   "host_mem_used_delta_mb": round(((m0["MemAvailable"] - m1["MemAvailable"]) / 1024), 1),
                   "host_disk_used_delta_mb": round((d1 - d0) / 1048576, 1), "all_see_tree": ok}
            if count == 1:
                out["steps_per_s_fork"] = round(steps_per_s(forks[0]), 1)
            for f in forks:
                f.close()
            out.setdefault("forks", []).append(row)
    finally:
        for i in cleanup_ids:
            try:
                os.unlink(os.path.join(state, "trajectories", i + ".jsonl"))
            except OSError:
                pass
        if snap:
            shutil.rmtree(os.path.join(state, "snapshots", snap["snapshot"]), ignore_errors=True)
        if proc:
            proc.terminate()
            proc.wait(60)
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
