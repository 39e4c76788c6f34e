"""paddock_client: a small client for the paddock daemon's session, trajectory, snapshot and judge
APIs, standard library only (urllib, json), the interface an RL environment wrapper is written
against.

    c = Client("http://127.0.0.1:8080")            # token: PADDOCK_TOKEN or token=
    s = c.create_session(template="bash", group_id="g1", sample_id="0")
    r = s.exec("pytest -q", timeout=60, request_id="step-3")   # shell string or argv list
    s.write_file("/work/fix.py", b"...")
    data = s.read_file("/work/out.txt")
    snap = s.snapshot(name="prepared", ttl=600)
    forks = c.fork(snap["snapshot"], count=8)     # a GRPO group from one prepared state
    lines = c.trajectory(s.id)                    # list of dicts, one per step
    s.reset(); s.close()
    rec = c.judge("sum", code, "python")           # the judged record (verdict, reward, tests)
    for rec in c.judge_stream("sum", [{"code": a}, {"code": b}], language="python"):
        print(rec["index"], rec["reward"])        # as each finishes; break hangs up (cancels the rest)

Errors from the daemon are raised as PaddockError (status, message). See docs/sessions.md.
"""

import json
import os
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["Client", "Session", "PaddockError", "EpisodeEnv"]


class PaddockError(Exception):
    """The daemon answered with an error: status is the HTTP status, message its text."""

    def __init__(self, status, message):
        super().__init__("%d: %s" % (status, message))
        self.status = status
        self.message = message


class Client:
    def __init__(self, url="http://127.0.0.1:8080", token=None, timeout=600):
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get("PADDOCK_TOKEN")
        self.timeout = timeout

    # ---- plumbing ------------------------------------------------------------------------------
    def request(self, method, path, body=None, raw=None, query=None, headers=None, want="json"):
        """One request; body is JSON-encoded, raw sent as bytes. want: "json", "bytes" or "text"."""
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None
        hdrs = dict(headers or {})
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        elif raw is not None:
            data = raw
        if self.token:
            hdrs["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                payload = resp.read()
        except urllib.error.HTTPError as e:
            payload = e.read()
            try:
                msg = json.loads(payload).get("error", payload.decode("utf-8", "replace"))
            except ValueError:
                msg = payload.decode("utf-8", "replace")
            raise PaddockError(e.code, msg) from None
        if want == "bytes":
            return payload
        if want == "text":
            return payload.decode("utf-8", "replace")
        return json.loads(payload) if payload else None

    # ---- sessions ------------------------------------------------------------------------------
    def create_session(self, template="bash", ttl=None, max_lifetime=None, metadata=None, group_id=None,
                       sample_id=None, end_on_limit=None, resume_from=None, noise=None, from_snapshot=None,
                       image=None, network=None, egress=None, budget=None, rules=None):
        """Opens a session. budget: {"steps", "wall_s", "cpu_s"} (an exec past it: PaddockError 409);
        rules: {"deny_commands", "deny_action", "max_repeats", "history_probe", "repeated_violation",
        "exempt"} (docs/sessions.md)."""
        body = {"template": template}
        for k, v in (("ttl", ttl), ("max_lifetime", max_lifetime), ("metadata", metadata),
                     ("group_id", group_id), ("sample_id", sample_id), ("end_on_limit", end_on_limit),
                     ("resume_from", resume_from), ("noise", noise), ("from_snapshot", from_snapshot),
                     ("image", image), ("network", network), ("egress", egress), ("budget", budget),
                     ("rules", rules)):
            if v is not None:
                body[k] = v
        if from_snapshot is not None and template == "bash":
            del body["template"]  # a fork takes its snapshot's template
        info = self.request("POST", "/v1/sessions", body)
        return Session(self, info)

    def fork(self, snapshot, count=1, group_id=None, **kw):
        """count sessions from a snapshot (one request: all or none)."""
        body = {"from_snapshot": snapshot, "count": count}
        if group_id is not None:
            body["group_id"] = group_id
        body.update({k: v for k, v in kw.items() if v is not None})
        out = self.request("POST", "/v1/sessions", body)
        return [Session(self, info) for info in out["sessions"]]

    def sessions(self):
        return self.request("GET", "/v1/sessions")["sessions"]

    def session(self, session_id):
        """A handle on an existing session."""
        return Session(self, self.request("GET", "/v1/sessions/" + session_id))

    # ---- trajectories --------------------------------------------------------------------------
    def trajectory_bytes(self, session_id):
        """The trajectory as stored (JSON lines), also after the session ended."""
        return self.request("GET", "/v1/sessions/%s/trajectory" % session_id, want="bytes")

    def trajectory(self, session_id):
        text = self.trajectory_bytes(session_id).decode("utf-8")
        return [json.loads(l) for l in text.splitlines() if l.strip()]

    # ---- judge (POST /v1/judge, issue 21) -------------------------------------------------------
    def judge(self, problem, code, language, group_id=None, sample_id=None, **kw):
        """Judges a submission (code in language) against a problem: a problem id (str) or an
        inline problem (dict: {"tests": [{"input", "output"}], "checker": {...}, "limits": {...}}),
        in sandboxes of its own (POST /v1/judge); returns the judged record (verdict, reward,
        tests). kw: problem_version, task_id, priority, deadline_ms, cache, stop_at_first_failure."""
        body = {"language": language, "code": code}
        if isinstance(problem, str):
            body["problem_id"] = problem
        else:
            body["problem"] = problem
        if group_id is not None:
            body["group_id"] = group_id
        if sample_id is not None:
            body["sample_id"] = sample_id
        body.update({k: v for k, v in kw.items() if v is not None})
        return self.request("POST", "/v1/judge", body)

    def judge_batch(self, problem, submissions, **shared):
        """Judges many submissions in one request: submissions is a list of dicts ({"code",
        "language", "sample_id", ...}); shared holds the fields they share (language, group_id,
        task_id prefixes are the submissions' own). Returns the judged records in the submissions'
        order, once all are judged."""
        body = self._batch_body(problem, submissions, shared)
        return self.request("POST", "/v1/judge", body)["results"]

    def judge_stream(self, problem, submissions, **shared):
        """As judge_batch, but yields each judged record as soon as it is judged (the daemon
        answers JSON lines in the order they finish); each carries "index", its place in
        submissions. Closing the generator early (break) hangs up, which cancels the submissions
        not judged yet."""
        body = self._batch_body(problem, submissions, shared)
        body["stream"] = True
        return self.lines("POST", "/v1/judge", body)

    @staticmethod
    def _batch_body(problem, submissions, shared):
        body = {"submissions": list(submissions)}
        if isinstance(problem, str):
            body["problem_id"] = problem
        elif problem is not None:
            body["problem"] = problem
        body.update({k: v for k, v in shared.items() if v is not None})
        return body

    def lines(self, method, path, body):
        """A request whose answer is JSON lines: yields each as it arrives. A refusal raises
        PaddockError; closing the generator closes the connection."""
        hdrs = {"Content-Type": "application/json"}
        if self.token:
            hdrs["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(), method=method,
                                     headers=hdrs)
        try:
            resp = urllib.request.urlopen(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            payload = e.read()
            try:
                msg = json.loads(payload).get("error", payload.decode("utf-8", "replace"))
            except ValueError:
                msg = payload.decode("utf-8", "replace")
            raise PaddockError(e.code, msg) from None
        with resp:
            for line in resp:
                if line.strip():
                    yield json.loads(line)

    def judge_session(self, session_id, problem, task_id=None, group_id=None, sample_id=None, reward=None,
                      claim=None, request_id=None):
        """Grades a session's files in a fork with an episode problem (an id loaded with --problems,
        or an inline problem dict): the judged record (its "reward" is None for an infrastructure
        failure). The session goes on; the verdict line is appended to its trajectory."""
        body = {"problem": problem} if isinstance(problem, dict) else {"problem_id": problem}
        for k, v in (("task_id", task_id), ("group_id", group_id), ("sample_id", sample_id),
                     ("reward", reward), ("claim", claim), ("request_id", request_id)):
            if v is not None:
                body[k] = v
        return self.request("POST", "/v1/sessions/%s/judge" % session_id, body)

    def annotate(self, session_id, request_id, reward=None, note=None):
        """A client's reward (a reward model's, a critic's) and note for the step recorded with
        request_id: an annotation line in the trajectory."""
        body = {"request_id": request_id}
        if reward is not None:
            body["reward"] = reward
        if note is not None:
            body["note"] = note
        return self.request("POST", "/v1/sessions/%s/annotate" % session_id, body)

    def group(self, group_id):
        """GET /v1/groups/{group_id}: every member's reward, usable, failure class."""
        return self.request("GET", "/v1/groups/" + urllib.parse.quote(group_id, safe=""))

    def health(self):
        return self.request("GET", "/healthz")

    # ---- replay (POST /v1/replay, POST /v1/sessions/{id}/replay) --------------------------------
    def replay(self, trajectory):
        """Replays a trajectory in a new session of its template: a session id (its trajectory in
        the daemon), or the trajectory itself (a list of line dicts, or its JSON-lines bytes).
        Returns the report: replayed, matched, first_divergent_step, steps[{step, match, diffs}]."""
        if isinstance(trajectory, str):
            return self.request("POST", "/v1/sessions/%s/replay" % trajectory)
        if isinstance(trajectory, (bytes, bytearray)):
            raw = bytes(trajectory)
        else:
            raw = "".join(json.dumps(l) + "\n" for l in trajectory).encode()
        return self.request("POST", "/v1/replay", raw=raw, headers={"Content-Type": "application/x-ndjson"})


class Session:
    """One session: a sandbox held across steps. Every step is in its trajectory."""

    def __init__(self, client, info):
        self.client = client
        self.info = info
        self.id = info["session_id"]

    def _p(self, op):
        return "/v1/sessions/%s/%s" % (self.id, op)

    @staticmethod
    def _rid(request_id):
        return {"X-Request-Id": request_id} if request_id else None

    @staticmethod
    def _exec_body(cmd, stdin, cwd, timeout, idle_timeout, request_id, agent=None):
        body = {"shell": cmd} if isinstance(cmd, str) else {"cmd": list(cmd)}
        for k, v in (("stdin", stdin), ("cwd", cwd), ("timeout", timeout), ("idle_timeout", idle_timeout),
                     ("request_id", request_id), ("agent", agent)):
            if v is not None:
                body[k] = v
        return body

    def exec(self, cmd, stdin=None, cwd=None, timeout=None, request_id=None, idle_timeout=None, agent=None):
        """Runs cmd (a shell string, or an argv list); returns the result record (status, exit_code,
        signal, stdout, stderr, ...; exit_code is None for a program that did not exit: a time-out,
        a kill, a signal; "noise" lists injected faults, "fast_forward" marks an answer from
        the resumed trajectory). A time limit ends the step (status TO), not the session;
        idle_timeout (seconds without output) too (TO with idle_timeout true).
        agent (a name: letters, digits, "-_.:@/") runs the step as that agent: steps of different
        agents run at once in the session (call from one thread per agent), an agent's own one at
        a time (its second while one runs: PaddockError 409 naming it); the answer and the
        trajectory line name it. Without agent: the default agent, as before."""
        body = self._exec_body(cmd, stdin, cwd, timeout, idle_timeout, request_id, agent)
        return self.client.request("POST", self._p("exec"), body)

    def exec_stream(self, cmd, stdin=None, cwd=None, timeout=None, request_id=None, idle_timeout=None, agent=None):
        """Runs cmd with its output sent while it runs: yields the events as they come, dicts
        {"event": "started"}, {"event": "output", "stream": "stdout"|"stderr", "data": text}, and
        last {"event": "result", ...the exec's answer...}. A refusal raises PaddockError. agent: as
        for exec."""
        body = self._exec_body(cmd, stdin, cwd, timeout, idle_timeout, request_id, agent)
        body["stream"] = True
        yield from self.client.lines("POST", self._p("exec"), body)

    def write_file(self, path, data, request_id=None):
        if isinstance(data, str):
            data = data.encode()
        return self.client.request("PUT", self._p("files"), raw=data, query={"path": path},
                                   headers=self._rid(request_id))

    def read_file(self, path, request_id=None):
        return self.client.request("GET", self._p("files"), query={"path": path}, headers=self._rid(request_id),
                                   want="bytes")

    def list_dir(self, path):
        return self.client.request("GET", self._p("files"), query={"path": path, "list": "1"})["entries"]

    def delete_file(self, path, request_id=None):
        return self.client.request("DELETE", self._p("files"), query={"path": path}, headers=self._rid(request_id))

    def stat(self, path):
        return self.client.request("GET", self._p("stat"), query={"path": path})

    def upload_tar(self, tar_bytes, dir="/work", request_id=None):
        return self.client.request("POST", self._p("upload"), raw=tar_bytes, query={"dir": dir},
                                   headers=self._rid(request_id))

    def download_tar(self, dir="/work", request_id=None):
        return self.client.request("GET", self._p("download"), query={"dir": dir}, headers=self._rid(request_id),
                                   want="bytes")

    def output(self, request_id, stream="stdout"):
        """The full output of an exec (beyond the head and tail its record keeps)."""
        return self.client.request("GET", self._p("output"), query={"request_id": request_id, "stream": stream},
                                   want="bytes")

    def reset(self, request_id=None):
        """Back to the template's fresh state (a fork: to its snapshot); same id and metadata."""
        return self.client.request("POST", self._p("reset"), headers=self._rid(request_id))

    def snapshot(self, name=None, ttl=None, max_bytes=None, request_id=None):
        """The session's files (not its processes) as a named immutable snapshot."""
        body = {}
        for k, v in (("name", name), ("ttl", ttl), ("max_bytes", max_bytes)):
            if v is not None:
                body[k] = v
        return self.client.request("POST", self._p("snapshot"), body, headers=self._rid(request_id))

    def fork(self, count=1, name=None, ttl=None, **kw):
        """Snapshot now and open count sessions from it."""
        snap = self.snapshot(name=name, ttl=ttl)
        return self.client.fork(snap["snapshot"], count=count, **kw)

    def state(self):
        return self.client.request("GET", "/v1/sessions/" + self.id)

    def replay(self):
        """Replays this session's trajectory in a new session (Client.replay)."""
        return self.client.replay(self.id)

    def trajectory(self):
        return self.client.trajectory(self.id)

    def judge(self, problem, **kw):
        """Client.judge_session for this session."""
        return self.client.judge_session(self.id, problem, **kw)

    def annotate(self, request_id, reward=None, note=None):
        return self.client.annotate(self.id, request_id, reward=reward, note=note)

    def close(self):
        try:
            return self.client.request("DELETE", "/v1/sessions/" + self.id)
        except PaddockError as e:
            if e.status != 404:
                raise
            return None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class EpisodeEnv:
    """A gym-style environment over a session: reset() -> observation, step(action) ->
    (observation, reward, done, info). An action is {"cmd": "..."} (a shell command),
    {"write": path, "content": text} or {"submit": True}; reward_fn(session, observation) gives
    the reward (e.g. through Client.judge), called when the agent submits or the step budget ends.
    Each step carries a request id "<episode>-<n>", so a resumed agent's steps are answered from
    the record (fast-forward) when the session is created with resume_from."""

    def __init__(self, client, template="bash", setup=None, reward_fn=None, max_steps=50, step_timeout=30,
                 problem=None, **session_kw):
        """problem: an episode problem (an id or an inline dict): grade() and the reward at the end
        are the server's grade of the session (POST /v1/sessions/{id}/judge), unless reward_fn is
        given."""
        self.client = client
        self.problem = problem
        self.last_grade = None
        self.template = template
        self.setup = setup or []
        self.reward_fn = reward_fn or (lambda session, obs: self.grade() if self.problem is not None else 0.0)
        self.max_steps = max_steps
        self.step_timeout = step_timeout
        self.session_kw = session_kw
        self.session = None
        self.n = 0
        self.episode = 0

    def reset(self):
        if self.session is None:
            self.session = self.client.create_session(template=self.template, **self.session_kw)
        else:
            self.session.reset()
        self.n = 0
        self.episode += 1
        for cmd in self.setup:
            self.session.exec(cmd, timeout=self.step_timeout)
        return {"session_id": self.session.id}

    def step(self, action):
        self.n += 1
        rid = "ep%d-%d" % (self.episode, self.n)
        if "submit" in action:
            obs = {"submitted": True}
        elif "write" in action:
            obs = self.session.write_file(action["write"], action.get("content", ""), request_id=rid)
        else:
            r = self.session.exec(action["cmd"], timeout=self.step_timeout, request_id=rid)
            # status and signal too: a step that timed out or was killed has exit_code None, and
            # an observation without its status would leave a reward to guess why
            obs = {k: r.get(k) for k in ("status", "exit_code", "signal", "stdout", "stderr", "noise", "flags")}
        done = "submit" in action or self.n >= self.max_steps
        reward = self.reward_fn(self.session, obs) if done else 0.0
        return obs, reward, done, {"step": self.n, "request_id": rid}

    def grade(self, **kw):
        """The server's grade of the session as it stands (the problem given at construction):
        the reward (None for an infrastructure failure); the whole record in last_grade."""
        self.last_grade = self.session.judge(self.problem, **kw)
        return self.last_grade.get("reward")

    def close(self):
        if self.session is not None:
            self.session.close()
            self.session = None
