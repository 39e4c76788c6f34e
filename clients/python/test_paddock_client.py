"""Tests of paddock_client against a real `paddock serve` started here (PADDOCK: the binary,
default bin/paddock of the repository). Run: python3 -m unittest clients/python/test_paddock_client.py"""

import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from paddock_client import Client, EpisodeEnv, PaddockError  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
PADDOCK = os.environ.get("PADDOCK", os.path.join(REPO, "bin", "paddock"))
if not os.path.isabs(PADDOCK):
    PADDOCK = os.path.join(REPO, PADDOCK)
STATE = os.environ.get("PADDOCK_STATE_DIR", "/var/lib/paddock")


class Daemon:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="pdk-pyclient-")
        self.log = open(os.path.join(self.tmp, "daemon.log"), "w+")
        self.proc = subprocess.Popen([PADDOCK, "serve", "--listen", "127.0.0.1:0", "--db",
                                      os.path.join(self.tmp, "db.sqlite")],
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        self.url = None
        while time.monotonic() < deadline and self.proc.poll() is None:
            self.log.seek(0)
            m = re.search(r"^paddock: serving on (\S+)", self.log.read(), re.M)
            if m:
                self.url = "http://" + m.group(1)
                break
            time.sleep(0.1)
        if not self.url:
            self.stop()
            raise RuntimeError("the daemon did not start")
        c = Client(self.url)
        while time.monotonic() < deadline:
            try:
                c.health()
                return
            except Exception:
                time.sleep(0.1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        subprocess.run(["rm", "-rf", self.tmp])


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()
        cls.c = Client(cls.d.url)
        cls.ids = []
        cls.snaps = []

    @classmethod
    def tearDownClass(cls):
        for s in cls.ids:
            try:
                os.unlink(os.path.join(STATE, "trajectories", s + ".jsonl"))
            except OSError:
                pass
        for n in cls.snaps:
            subprocess.run(["rm", "-rf", os.path.join(STATE, "snapshots", n)])
        cls.d.stop()

    def session(self, **kw):
        s = self.c.create_session(**kw)
        self.ids.append(s.id)
        return s

    def test_steps_files_and_trajectory(self):
        with self.session(group_id="g", sample_id="1") as s:
            r = s.exec("echo hi; echo err >&2; exit 4", request_id="a")
            self.assertEqual((r["status"], r["exit_code"], r["stdout"], r["stderr"]), ("RE", 4, "hi\n", "err\n"))
            self.assertEqual(s.exec(["cat"], stdin="in put")["stdout"], "in put")
            s.write_file("/work/d/bin.dat", bytes(range(256)), request_id="w")
            self.assertEqual(s.read_file("/work/d/bin.dat"), bytes(range(256)))
            self.assertEqual([e["name"] for e in s.list_dir("/work/d")], ["bin.dat"])
            self.assertEqual(s.stat("/work/d/bin.dat")["size"], 256)
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as t:
                info = tarfile.TarInfo("up.txt")
                info.size = 3
                t.addfile(info, io.BytesIO(b"abc"))
            s.upload_tar(buf.getvalue(), dir="/work/up")
            names = tarfile.open(fileobj=io.BytesIO(s.download_tar("/work/up"))).getnames()
            self.assertIn("./up.txt", names)
            s.delete_file("/work/d/bin.dat")
            with self.assertRaises(PaddockError) as cm:
                s.read_file("/work/d/bin.dat")
            self.assertEqual(cm.exception.status, 404)
            lines = s.trajectory()
        self.assertEqual(lines[0]["kind"], "session")
        kinds = [l["kind"] for l in lines[1:]]
        self.assertEqual(kinds[:4], ["exec", "exec", "write", "read"])
        self.assertIn("upload", kinds)
        self.assertIn("delete", kinds)
        self.assertTrue(all(l.get("group_id") == "g" for l in lines[1:-1]))
        w = [l for l in lines if l.get("request_id") == "w"][0]
        self.assertEqual(w["files_changed"][-1]["path"], "/work/d/bin.dat")
        # after the end, byte for byte
        self.assertTrue(self.c.trajectory_bytes(s.id).endswith(b'\n'))
        self.assertEqual(self.c.trajectory(s.id)[-1]["kind"], "close")

    def test_agents(self):
        """Two agents' steps at once, each waiting for the other's file (issue 40)."""
        import threading
        with self.session() as s:
            got = {}

            def run(me, other):
                got[me] = s.exec("touch /work/%s; while [ ! -e /work/%s ]; do sleep 0.05; done; echo %s"
                                 % (me, other, me), agent=me, timeout=30)

            ts = [threading.Thread(target=run, args=p) for p in (("p1", "p2"), ("p2", "p1"))]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            self.assertEqual([(got[a]["status"], got[a]["stdout"], got[a]["agent"]) for a in ("p1", "p2")],
                             [("OK", "p1\n", "p1"), ("OK", "p2\n", "p2")])
            lines = [l for l in s.trajectory() if l["kind"] == "exec"]
            self.assertEqual(sorted(l["agent"] for l in lines), ["p1", "p2"])
            self.assertNotIn("agent", s.exec("true"))


        with self.session() as s:
            events = list(s.exec_stream("echo one; echo two >&2", request_id="st"))
            self.assertEqual(events[0]["event"], "started")
            out = "".join(e["data"] for e in events if e["event"] == "output" and e["stream"] == "stdout")
            self.assertEqual(out, "one\n")
            self.assertEqual((events[-1]["event"], events[-1]["status"]), ("result", "OK"))
            r = s.exec("echo quiet-now; sleep 60", idle_timeout=1, timeout=120, request_id="idle")
            self.assertEqual((r["status"], r["idle_timeout"], r["stdout"]), ("TO", True, "quiet-now\n"))
            s.write_file("/work/x", b"x", request_id="wx")
        rep = self.c.replay(s.id)
        self.ids.append(rep["replay_trajectory_id"])
        self.assertEqual((rep["replayed"], rep["matched"], rep["first_divergent_step"]), (3, 3, None))
        rep2 = self.c.replay(self.c.trajectory(s.id))
        self.ids.append(rep2["replay_trajectory_id"])
        self.assertEqual(rep2["matched"], 3)

    def test_timeout_reset(self):
        with self.session() as s:
            r = s.exec("echo partial; sleep 30", timeout=1)
            self.assertEqual((r["status"], r["stdout"]), ("TO", "partial\n"))
            # a program that did not exit has no exit code: never a 0 that reads as a success
            self.assertEqual((r["exit_code"], r["signal"]), (None, 9))
            self.assertEqual(s.exec("echo on")["stdout"], "on\n")
            s.write_file("/work/x", "x")
            self.assertEqual(s.reset()["state"], "READY")
            self.assertEqual(s.exec("ls -A /work")["stdout"], "")

    def test_snapshot_fork(self):
        s = self.session()
        s.exec("echo base > /work/f")
        name = "pyc-%d" % os.getpid()
        self.snaps.append(name)
        snap = s.snapshot(name=name, ttl=300)
        self.assertEqual(snap["files"], 1)
        forks = self.c.fork(name, count=2)
        self.ids.extend(f.id for f in forks)
        forks[0].exec("echo mine > /work/f")
        self.assertEqual(forks[1].exec("cat /work/f")["stdout"], "base\n")
        for f in forks + [s]:
            f.close()

    def test_noise_and_fast_forward(self):
        a = self.session(noise={"seed": 5, "fail_rate": 0.5})
        b = self.session(noise={"seed": 5, "fail_rate": 0.5})
        na = [a.exec("echo %d" % i, request_id="r%d" % i).get("noise") for i in range(6)]
        nb = [b.exec("echo %d" % i, request_id="r%d" % i).get("noise") for i in range(6)]
        self.assertEqual(na, nb)
        a.close()
        b.close()
        src = self.session()
        src.exec("echo 1 >> /work/n", request_id="once")
        src.close()
        r = self.session(resume_from=src.id)
        self.assertTrue(r.exec("echo 1 >> /work/n", request_id="once").get("fast_forward"))
        self.assertEqual(r.exec("cat /work/n 2>/dev/null || echo none")["stdout"], "none\n")
        r.close()

    def test_episode_env(self):
        env = EpisodeEnv(self.c, setup=["printf 'def add(a, b):\\n    return a - b\\n' > /work/m.py"],
                         reward_fn=lambda s, o: 1.0 if s.exec("grep -q 'a + b' /work/m.py")["exit_code"] == 0 else 0.0)
        env.reset()
        self.ids.append(env.session.id)
        obs, rew, done, info = env.step({"cmd": "cat /work/m.py"})
        self.assertIn("a - b", obs["stdout"])
        self.assertEqual((obs["status"], obs["exit_code"], obs["signal"]), ("OK", 0, 0))
        self.assertFalse(done)
        # a step that times out says so: status TO, the signal, and no exit code
        env.step_timeout = 1
        obs, rew, done, info = env.step({"cmd": "sleep 30"})
        self.assertEqual((obs["status"], obs["exit_code"], obs["signal"]), ("TO", None, 9))
        env.step_timeout = 30
        env.step({"write": "/work/m.py", "content": "def add(a, b):\n    return a + b\n"})
        obs, rew, done, info = env.step({"submit": True})
        self.assertTrue(done)
        self.assertEqual(rew, 1.0)
        env.reset()  # the same session, back to its fresh state
        self.assertIn("a - b", env.session.read_file("/work/m.py").decode())
        env.close()

    def test_judge(self):
        try:
            rec = self.c.judge({"tests": [{"input": "1 2\n", "output": "3\n"}]},
                               code="a, b = map(int, input().split())\nprint(a + b)\n", language="python")
        except PaddockError as e:
            if e.status == 404 and "no such endpoint" in e.message:
                self.skipTest("POST /v1/judge is not in this daemon")
            raise
        self.assertEqual(rec["verdict"]["output"]["status"], "pass")
        self.assertEqual(rec["reward"], 1)
        wrong = self.c.judge({"tests": [{"input": "1 2\n", "output": "3\n"}]}, code="print(4)\n",
                             language="python", group_id="g", sample_id="2")
        self.assertEqual(wrong["verdict"]["output"]["status"], "fail")
        self.assertEqual(wrong["reward"], 0)

    def test_judge_batch_and_stream(self):
        problem = {"tests": [{"input": "1 2\n", "output": "3\n"}]}
        subs = [{"sample_id": "right", "code": "a, b = map(int, input().split())\nprint(a + b)\n"},
                {"sample_id": "wrong", "code": "print(4)\n"}]
        recs = self.c.judge_batch(problem, subs, language="python", group_id="gb")
        self.assertEqual([(r["sample_id"], r["verdict"]["output"]["status"], r["group_id"]) for r in recs],
                         [("right", "pass", "gb"), ("wrong", "fail", "gb")])
        # streamed: every record once, with its index, as it finishes
        got = list(self.c.judge_stream(problem, subs, language="python", cache=False))
        self.assertEqual(sorted((r["index"], r["sample_id"], r["verdict"]["output"]["status"]) for r in got),
                         [(0, "right", "pass"), (1, "wrong", "fail")])
        with self.assertRaises(PaddockError) as cm:
            list(self.c.judge_stream(problem, [{"code": "x"}], language="cobol"))
        self.assertEqual(cm.exception.status, 400)
        self.assertIn("submissions[0]: language", cm.exception.message)

    def test_episode_grading(self):
        """issue 40: budget and rules at create, judge_session, annotate, the gym wrapper's grade()"""
        hidden = {"kind": "episode", "files": {"check.sh": "grep -q fixed /work/state"},
                  "command": "sh check.sh", "reward": {"mode": "binary"}}
        with self.session(budget={"steps": 3}, rules={"max_repeats": 1}, group_id="pyg-%d" % os.getpid(),
                          sample_id="a") as s:
            s.exec("echo broken > /work/state", request_id="s1")
            rec = s.judge(hidden, task_id="py-ep-%d" % os.getpid())
            self.assertEqual((rec["kind"], rec["verdict"]["output"]["status"], rec["reward"]), ("episode", "fail", 0))
            s.exec("echo fixed > /work/state", request_id="s2")
            self.assertEqual(s.annotate("s2", reward=0.5, note="critic")["annotates"], 3)
            r = s.exec("echo fixed > /work/state", request_id="s3")
            self.assertEqual(r["flags"], ["loop"])
            with self.assertRaises(PaddockError) as cm:
                s.exec("true")
            self.assertEqual(cm.exception.status, 409)
            self.assertIn("budget: steps", cm.exception.message)
            rec = self.c.judge_session(s.id, hidden, claim={"tests_pass": True}, group_id="pyg-%d" % os.getpid())
            self.assertEqual((rec["verdict"]["output"]["status"], rec["verdict"]["process"]["status"],
                              rec["verdict"]["resources"]["status"]), ("pass", "fail", "fail"))
            lines = s.trajectory()
            self.assertEqual([ln["kind"] for ln in lines[-3:]], ["annotation", "exec", "verdict"])
            self.assertEqual(self.c.group("pyg-%d" % os.getpid())["size"], 1)
        env = EpisodeEnv(self.c, template="bash", problem=hidden)
        self.ids.append(env.reset()["session_id"])
        obs, reward, done, info = env.step({"cmd": "echo fixed > /work/state; kill -9 $$"})
        self.assertEqual((obs["status"], obs["signal"], reward, done), ("SG", 9, 0.0, False))
        obs, reward, done, info = env.step({"submit": True})
        self.assertEqual((reward, done, env.last_grade["verdict"]["output"]["status"]), (1, True, "pass"))
        env.close()


if __name__ == "__main__":
    unittest.main()
