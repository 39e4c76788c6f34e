#!/usr/bin/env python3
"""The example episode: a small repository with a bug (repo/), hidden tests (hidden_tests/), and 8
recorded agents (agents.jsonl: shell commands, file writes, patches, a submit) run as 8 forks of one
prepared session, then judged, each in a separate sandbox with the hidden tests, and their
trajectories exported.

    python3 examples/episode/run_episode.py --url http://127.0.0.1:8080 --out /tmp/episode

Prepare: one session gets the repository (upload), checks that the visible tests run, and is
snapshotted; 8 forks of that snapshot (POST /v1/sessions {from_snapshot, count: 8, group_id}) run
the 8 action sequences (a step's timeout ends the step, not the episode). Judge: the fork's
/work/repo is downloaded and unpacked, with the hidden tests, into a fresh session of its own (the
hidden tests never enter the agent's sandbox), which runs them; the reward is the fraction passed.
POST /v1/judge (issue 21) is the judge's place when the daemon has it; this example does the
equivalent itself. Out: <out>/<agent>.jsonl (the trajectory), <out>/summary.json."""

import argparse
import io
import json
import os
import re
import subprocess
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
from paddock_client import Client  # noqa: E402


def tar_of(dirs):
    """A tar of {arcname: host dir}."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for arc, d in dirs.items():
            t.add(d, arcname=arc)
    return buf.getvalue()


def run_agent(session, agent):
    n = 0
    for a in agent["actions"]:
        n += 1
        rid = "%s-%d" % (agent["agent"], n)
        if "submit" in a:
            break
        if "cmd" in a:
            session.exec(a["cmd"], cwd="/work/repo", timeout=a.get("timeout", 20), request_id=rid)
        elif "write" in a:
            session.write_file("/work/repo/" + a["write"], a["content"], request_id=rid)
        elif "patch" in a:
            old, new, line = a["patch"]
            # an editor's action: replace the line-th occurrence of old (a python one-liner in the
            # sandbox, so the step is an exec with its file change in the trajectory)
            script = ("import sys;p='calc/stats.py';s=open(p).read();o,n,k=sys.argv[1:4];"
                      "i=-1\nfor _ in range(int(k)): i=s.index(o,i+1)\nopen(p,'w').write(s[:i]+n+s[i+len(o):])")
            session.exec(["python3", "-c", script, old, new, str(line)], cwd="/work/repo", request_id=rid)
    return n


def judge(client, fork, hidden):
    """Runs the hidden tests against the fork's repository in a separate sandbox."""
    repo_tar = fork.download_tar("/work/repo")
    with client.create_session(template="python", metadata={"judge_of": fork.id}) as j:
        j.upload_tar(repo_tar, dir="/judge/repo")
        j.upload_tar(tar_of({"hidden": hidden}), dir="/judge")
        r = j.exec("cp hidden/test_hidden.py repo/ && cd repo && python3 -m unittest -v test_hidden 2>&1",
                   cwd="/judge", timeout=30)
    out = r["stdout"]
    passed = len(re.findall(r"\.\.\. ok$", out, re.M))
    total = len(re.findall(r"^test_\w+ ", out, re.M))
    return {"passed": passed, "total": total, "reward": (passed / total) if total else 0.0,
            "status": r["status"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--out", default="episode-out")
    ap.add_argument("--paddock", default=os.path.join(HERE, "..", "..", "bin", "paddock"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    c = Client(args.url)
    agents = [json.loads(l) for l in open(os.path.join(HERE, "agents.jsonl")) if l.strip()]
    # prepare once
    with c.create_session(template="python", group_id="calc-median") as prep:
        prep.upload_tar(tar_of({"repo": os.path.join(HERE, "repo")}), dir="/work")
        r = prep.exec("python3 -m unittest -q test_visible 2>&1 | tail -1", cwd="/work/repo")
        snap = prep.snapshot(ttl=900)
    print("prepared: %s (%d files, visible tests: %s)" % (snap["snapshot"], snap["files"], r["stdout"].strip()))
    forks = c.fork(snap["snapshot"], count=len(agents), group_id="calc-median")
    summary = []
    for i, (f, agent) in enumerate(zip(forks, agents)):
        steps = run_agent(f, agent)
        verdict = judge(c, f, os.path.join(HERE, "hidden_tests"))
        f.close()
        path = os.path.join(args.out, agent["agent"] + ".jsonl")
        with open(path, "wb") as fh:
            fh.write(c.trajectory_bytes(f.id))
        atif = os.path.join(args.out, agent["agent"] + ".atif.json")
        subprocess.run([args.paddock, "export", path, "--format", "atif", "-o", atif], check=False)
        row = {"sample_id": i, "agent": agent["agent"], "session_id": f.id, "steps": steps, **verdict,
               "trajectory": path, "atif": atif}
        summary.append(row)
        print("%-18s reward %.2f  (%d/%d hidden tests, %d steps)  %s" %
              (agent["agent"], verdict["reward"], verdict["passed"], verdict["total"], steps, path))
    with open(os.path.join(args.out, "summary.json"), "w") as fh:
        json.dump({"snapshot": snap["snapshot"], "group_id": "calc-median", "samples": summary}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
