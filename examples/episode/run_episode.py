#!/usr/bin/env python3
"""The example episode, a SWE-style task graded by the server, on an imported image: the task's
image (mkimage.py: the host's python3 and git, and /repo, a git repository whose `main` has a bug
and whose future — the fix — sits on a branch `upstream`; grade.sh imports it as
calc-median:task), an episode problem (problems/calc-median: hidden tests with fail_to_pass /
pass_to_pass, run by a runner that prints pytest's -rA lines, and rules: history_probe,
max_repeats) and 11 recorded agents (agents.jsonl: commands, file writes, patches, a submit with
the agent's claim). Each agent runs in a session of its own on the image (POST /v1/sessions
{"image": ...}) and is graded with POST /v1/sessions/{id}/judge (issue 40): in a fork of the
session, with the hidden tests placed there and never in the agent's sandbox; the verdict and the
reward end each trajectory, which is exported (JSON lines and ATIF).

    python3 examples/episode/run_episode.py --url http://127.0.0.1:8080 --image calc-median:task --out /tmp/episode

The daemon must allow the image (paddock serve --images calc-median:task).
Out: <out>/<agent>.jsonl (the trajectory), <out>/<agent>.atif.json, <out>/summary.json."""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
from paddock_client import Client  # noqa: E402


def run_agent(session, agent):
    n = 0
    for a in agent["actions"]:
        n += 1
        rid = "%s-%d" % (agent["agent"], n)
        if "submit" in a:
            break
        if "cmd" in a:
            session.exec(a["cmd"], timeout=a.get("timeout", 20), request_id=rid)
        elif "write" in a:
            session.write_file("/repo/" + a["write"], a["content"], request_id=rid)
        elif "patch" in a:
            old, new, line = a["patch"]
            # an editor's action: replace the line-th occurrence of old (a python one-liner in the
            # sandbox, so the step is an exec with its file change in the trajectory)
            script = ("import sys;p='calc/stats.py';s=open(p).read();o,n,k=sys.argv[1:4];"
                      "i=-1\nfor _ in range(int(k)): i=s.index(o,i+1)\nopen(p,'w').write(s[:i]+n+s[i+len(o):])")
            session.exec(["python3", "-c", script, old, new, str(line)], request_id=rid)
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--out", default="episode-out")
    ap.add_argument("--group", default="calc-median")
    ap.add_argument("--image", default="calc-median:task")
    ap.add_argument("--paddock", default=os.path.join(HERE, "..", "..", "bin", "paddock"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    c = Client(args.url)
    agents = [json.loads(l) for l in open(os.path.join(HERE, "agents.jsonl")) if l.strip()]
    problem = load_problem(os.path.join(HERE, "problems", "calc-median"))
    group = args.group
    # the problem names the image it is graded on; a session of another is refused the grade
    problem["image"] = args.image
    image = None
    summary = []
    for i, agent in enumerate(agents):
        # the session on the task's image, with the problem's rules from its first step
        f = c.create_session(template="python", image=args.image, group_id=group, sample_id=str(i),
                             rules=problem.get("rules"))
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
        image = rec.get("image")
        summary.append(row)
        print("%-18s %-7s %-11s %-5s reward %5s  %d/%d hidden tests  %2d steps  %s" %
              (agent["agent"], row["output"], row["process"], row["resources"], rec["reward"], passed,
               len(rec["tests"]), steps, "; ".join(rec["reasons"])[:70]))
    g = c.group(group)
    print("group %s: %d samples, mean reward %s, usable %s" % (group, g["size"], g["mean_reward"], g["usable"]))
    with open(os.path.join(args.out, "summary.json"), "w") as fh:
        json.dump({"image": image, "group_id": group, "group": g, "samples": summary}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
