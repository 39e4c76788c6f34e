#!/usr/bin/env python3
"""Goodput under a trainer's load, and the time to a limit verdict (issue 20). A benchmark, not a
test: it prints figures, it asserts nothing.

    scripts/bench-goodput.py [--paddock bin/paddock] [--duration 10] [--job-cpu 0.3] [--deadline 3]

Starts its own daemon (default options, a fresh store in a temporary directory) and stops it.

goodput: clients of a CPU-bound python job (--job-cpu seconds of CPU), each with a deadline
(deadline_ms on /v1/runs, and the same read timeout: the client gives up then, as verl's does).
First the capacity: as many closed-loop clients as the daemon has workers, for --duration; then
open-loop arrivals at 1x, 2x and 5x that rate for --duration each. For each load:
  in time     accepted requests answered before their deadline / accepted requests (target >= 0.99)
  cpu useful  CPU of the runs answered in time / CPU of every run the daemon started (the store's
              records: a run cancelled when its client left counts what it used) (target >= 0.9)
  recovery    from the end of the flood until a request is admitted (target <= 1 s)
memory: time to the verdict (the run's exec_ms) of a 300 MB python allocation under 256 MB, alone
and 8 at once (target: under 100 ms alone); an infinite loop under a 1 s wall limit: how far past
the limit its time verdict came (target: within 50 ms).
"""
import argparse, json, os, re, signal, sqlite3, statistics, subprocess, sys, tempfile, threading, time
import urllib.error, urllib.request


def post(url, body, timeout):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, None
    except Exception:
        return None, None  # the client gave up (read timeout) or the connection failed


def job(args, tid):
    code = ("import time\nt = time.process_time()\nwhile time.process_time() - t < %g: pass\nprint('ok')"
            % args.job_cpu)
    return {"language": "python", "code": code, "task_id": tid, "deadline_ms": int(args.deadline * 1000),
            "limits": {"wall_time": args.deadline * 4}}


def capacity(args, u, workers):
    stop = time.time() + args.duration
    done = [0] * workers

    def loop(i):
        k = 0
        while time.time() < stop:
            code, r = post(u + "/v1/runs", job(args, "cap-%d-%d" % (i, k)), 60)
            k += 1
            if code == 200 and r.get("status") == "OK":
                done[i] += 1
    ts = [threading.Thread(target=loop, args=(i,)) for i in range(workers)]
    t0 = time.time()
    [t.start() for t in ts]
    [t.join() for t in ts]
    return sum(done) / (time.time() - t0)


def flood(args, u, rate, tag):
    res = []
    lock = threading.Lock()

    def one(i):
        t0 = time.time()
        code, r = post(u + "/v1/runs", job(args, "%s-%d" % (tag, i)), args.deadline)
        el = time.time() - t0
        with lock:
            res.append((code, r, el))
    ts = []
    t_start = time.time()
    n = int(rate * args.duration)
    for i in range(n):
        at = t_start + i / rate
        d = at - time.time()
        if d > 0:
            time.sleep(d)
        t = threading.Thread(target=one, args=(i,))
        t.start()
        ts.append(t)
    t_end = time.time()
    # recovery: the first request admitted after the flood's last arrival (quick, default deadline)
    recovery = None
    k = 0
    while recovery is None and time.time() - t_end < 30:
        code, _ = post(u + "/v1/runs", {"language": "bash", "code": "true", "task_id": "%s-idle-%d" % (tag, k)}, 30)
        k += 1
        if code == 200:
            recovery = time.time() - t_end
    [t.join() for t in ts]
    refused = sum(1 for c, _, _ in res if c in (429, 503, 504))
    accepted = [(c, r, el) for c, r, el in res if c not in (429, 503, 504)]
    in_time = sum(1 for c, r, el in accepted if c == 200 and r and r.get("status") == "OK" and el <= args.deadline)
    return {"offered": n, "refused": refused, "accepted": len(accepted), "in_time": in_time,
            "share_in_time": in_time / len(accepted) if accepted else 1.0, "recovery_s": recovery,
            "answered": [r["task_id"] for c, r, el in accepted if c == 200 and r and r.get("status") == "OK"
                         and el <= args.deadline]}


def cpu_of(db, tag):
    con = sqlite3.connect(db)
    rows = con.execute("SELECT task_id, json_extract(record, '$.run.cpu_ms') FROM attempts WHERE task_id LIKE ?",
                       (tag + "-%",)).fetchall()
    con.close()
    return {t: (c or 0) for t, c in rows if "-idle-" not in t}


def memory(u):
    body = {"language": "python", "code": "x = bytearray(300 * 1024 * 1024)", "limits": {"memory": "256M", "wall_time": 2}}
    out = {}
    for n in (1, 8):
        res = [None] * n

        def go(i):
            res[i] = post(u + "/v1/runs", body, 60)[1]
        for rep in range(3):
            ts = [threading.Thread(target=go, args=(i,)) for i in range(n)]
            [t.start() for t in ts]
            [t.join() for t in ts]
            out.setdefault(n, []).extend((r["status"], r["run"]["exec_ms"]) for r in res)
    loop = []
    for rep in range(5):
        _, r = post(u + "/v1/runs", {"language": "python", "code": "while True: pass", "limits": {"wall_time": 1}}, 60)
        loop.append((r["status"], r["run"]["exec_ms"] - 1000))
    return out, loop


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--paddock", default="bin/paddock")
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--job-cpu", type=float, default=0.3)
    ap.add_argument("--deadline", type=float, default=3)
    ap.add_argument("--loads", default="1,2,5")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="paddock-goodput.")
    db = os.path.join(tmp, "db.sqlite")
    log = open(os.path.join(tmp, "daemon.log"), "w+")
    d = subprocess.Popen([args.paddock, "serve", "--listen", "127.0.0.1:0", "--db", db],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        u = None
        for _ in range(300):
            log.seek(0)
            m = re.search(r"serving on (\S+)", log.read())
            if m:
                u = "http://" + m.group(1)
                break
            time.sleep(0.1)
        if not u:
            sys.exit("the daemon did not start")
        metrics = urllib.request.urlopen(u + "/metrics", timeout=10).read().decode()
        m = re.search(r"^paddock_workers (\d+)", metrics, re.M)
        workers = int(m.group(1)) if m else os.cpu_count()
        print("host: %d CPUs, load average %s; daemon workers %d; job %.2f s CPU, deadline %.1f s"
              % (os.cpu_count(), os.getloadavg()[0], workers, args.job_cpu, args.deadline))
        cap = capacity(args, u, workers)
        print("capacity: %.2f jobs/s (%d closed-loop clients, %.0f s)" % (cap, workers, args.duration))
        print("%-5s %8s %8s %8s %8s %9s %11s %11s" % ("load", "offered", "refused", "accepted", "in_time",
                                                     "in_time%", "cpu_useful", "recovery_s"))
        for f in [float(x) for x in args.loads.split(",")]:
            tag = "g%g" % f
            r = flood(args, u, cap * f, tag)
            # the cancelled runs' records are written when their kill completes
            time.sleep(2)
            cpu = cpu_of(db, tag)
            total = sum(cpu.values())
            useful = sum(cpu.get(t, 0) for t in r["answered"])
            print("%-5s %8d %8d %8d %8d %9.3f %11.3f %11s" % (
                "%gx" % f, r["offered"], r["refused"], r["accepted"], r["in_time"], r["share_in_time"],
                useful / total if total else 1.0, "%.3f" % r["recovery_s"] if r["recovery_s"] is not None else "never"))
        mem, loop = memory(u)
        for n, v in mem.items():
            ms = [x for _, x in v]
            print("memory verdict, %d at once: statuses %s; exec_ms median %.0f, max %.0f"
                  % (n, dict((s, sum(1 for y, _ in v if y == s)) for s in set(y for y, _ in v)),
                     statistics.median(ms), max(ms)))
        print("time verdict, infinite loop at 1 s: statuses %s; ms past the limit: median %.0f, max %.0f"
              % (sorted(set(s for s, _ in loop)), statistics.median(x for _, x in loop), max(x for _, x in loop)))
    finally:
        d.send_signal(signal.SIGTERM)
        try:
            d.wait(60)
        except subprocess.TimeoutExpired:
            d.kill()


if __name__ == "__main__":
    main()
