#!/usr/bin/env python3
"""The example episode, a SWE-style task graded by the server: a small repository with a bug
(repo/, a git repository whose future holds the fix on another branch), an episode problem
(problems/calc-median: hidden tests with fail_to_pass / pass_to_pass, run by a runner that prints
pytest's -rA lines, and rules: history_probe, max_repeats), and 11 recorded agents
(agents.jsonl: commands, file writes, patches, a submit with the agent's claim) run as 11 forks of
one prepared session, each graded with POST /v1/sessions/{id}/judge (issue 40): in a fork of the
session, with the hidden tests placed there and never in the agent's sandbox; the verdict and the
reward end each trajectory, which is exported (JSON lines and ATIF).

    python3 examples/episode/run_episode.py --url http://127.0.0.1:8080 --out /tmp/episode

Out: <out>/<agent>.jsonl (the trajectory), <out>/<agent>.atif.json, <out>/summary.json."""

import argparse
import io
import json
import os
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


def load_problem(d):
    """An episode problem directory as an inline problem (problem.json and files/)."""
    prob = json.load(open(os.path.join(d, "problem.json")))
    files = {}
    top = os.path.join(d, "files")
    for root, _, names in os.walk(top):
        for n in names:
            full = os.path.join(root, n)
            files[os.path.relpath(full, top)] = open(full).read()
    prob["files"] = files
    return prob


# the repository's future: the fix, committed on a branch the agent's checkout does not show
GIT = ("git -c user.name=dev -c user.email=dev@example.invalid -c init.defaultBranch=main")
PREPARE = (GIT + " init -q && " + GIT + " add -A && " + GIT + " commit -qm base && " + GIT + " checkout -qb upstream && "
           "sed -i 's/^    return s\\[mid\\]$/    return (s[mid - 1] + s[mid]) \\/ 2/' calc/stats.py && "
           + GIT + " commit -qam 'fix median of even-length lists' && " + GIT + " checkout -q main && "
           "python3 -m unittest -q test_visible 2>&1 | tail -1")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--out", default="episode-out")
    ap.add_argument("--group", default="calc-median")
    ap.add_argument("--paddock", default=os.path.join(HERE, "..", "..", "bin", "paddock"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    c = Client(args.url)
    agents = [json.loads(l) for l in open(os.path.join(HERE, "agents.jsonl")) if l.strip()]
    problem = load_problem(os.path.join(HERE, "problems", "calc-median"))
    group = args.group
    # prepare once
    with c.create_session(template="python", group_id=group) as prep:
        prep.upload_tar(tar_of({"repo": os.path.join(HERE, "repo")}), dir="/work")
        r = prep.exec(PREPARE, cwd="/work/repo", timeout=60)
        snap = prep.snapshot(ttl=900)
    print("prepared: %s (%d files, visible tests: %s)" % (snap["snapshot"], snap["files"], r["stdout"].strip()))
    forks = c.fork(snap["snapshot"], count=len(agents), group_id=group, rules=problem.get("rules"))
    summary = []
    for i, (f, agent) in enumerate(zip(forks, agents)):
        steps = run_agent(f, agent)
        claim = next((a.get("claim") for a in agent["actions"] if "submit" in a), None)
        rec = f.judge(problem, group_id=group, sample_id=str(i), task_id="%s-%s" % (f.id, agent["agent"]),
                      claim=claim, request_id="grade")
        f.close()
        path = os.path.join(args.out, agent["agent"] + ".jsonl")
        with open(path, "wb") as fh:
            fh.write(c.trajectory_bytes(f.id))
        atif = os.path.join(args.out, agent["agent"] + ".atif.json")
        subprocess.run([args.paddock, "export", path, "--format", "atif", "-o", atif], check=False)
        v = rec["verdict"]
        passed = sum(1 for t in rec["tests"] if t["status"] == "pass")
        row = {"sample_id": i, "agent": agent["agent"], "session_id": f.id, "steps": steps,
               "output": v["output"]["status"], "process": v["process"]["status"],
               "resources": v["resources"]["status"], "reward": rec["reward"], "usable": rec["usable"],
               "passed": passed, "total": len(rec["tests"]), "reasons": rec["reasons"],
               "claim_mismatch": bool((rec.get("claim") or {}).get("mismatch")),
               "trajectory": path, "atif": atif}
        summary.append(row)
        print("%-18s %-7s %-11s %-5s reward %5s  %d/%d hidden tests  %2d steps  %s" %
              (agent["agent"], row["output"], row["process"], row["resources"], rec["reward"], passed,
               len(rec["tests"]), steps, "; ".join(rec["reasons"])[:70]))
    g = c.group(group)
    print("group %s: %d samples, mean reward %s, usable %s" % (group, g["size"], g["mean_reward"], g["usable"]))
    with open(os.path.join(args.out, "summary.json"), "w") as fh:
        json.dump({"snapshot": snap["snapshot"], "group_id": group, "group": g, "samples": summary}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
