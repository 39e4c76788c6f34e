#!/usr/bin/env python3
"""Builds the OCI image layouts and docker-save archives tests/api/image.t imports (no registry and
no Docker engine on a test machine): mkimage.py SCENARIO OUT [CANARY].

A base layer holds bash, a few coreutils and their libraries copied from the host (each path as
the host has it, symlinked /lib64 and all), gzip-compressed. Scenarios:
  layered        base + a layer with hard links, a symlink out of the root, an xattr, files to hide
                 + a zstd layer: a whiteout, an opaque dir, a hard link to the layer below (OCI dir)
  layered-tar    the same as an OCI layout tar
  docker         the same and two empty layers as a `docker save` archive (manifest.json,
                 uncompressed layer tars, the second empty one a symlink to the first)
  other          base + a different small layer (to share the base with layered)
  many N         OUT/img-1..N: base + a layer of its own each (scripts/bench-images.sh)
  dotdot         a layer with '../NAME': must be refused
  absolute       a layer with '/abs-NAME': must be refused
  symlink        a layer with a symlink to CANARY and a file written through it: must be refused
  device         a layer with a character device: must be refused
  corrupt        layered with a layer's bytes changed after its digest was taken
  sparse         base + a 1 GiB sparse file (GNU tar -S)
  pyrepo         a Python repository at a commit: the host's python3 and its standard library,
                 bash, and /repo with a bug its visible test finds (tests/api/image_episode.t)
  toomany        layered + 6 more layers: 9, more than a sandbox stacks (the lowest are flattened)
  gitrepo        base + the host's git + /repo, a git repository whose main branch was reset to
                 the task's commit after the fix was committed: the fix is still in the reflog,
                 ORIG_HEAD, a branch, a tag and a stray blob (OUT.task, OUT.future: the commits)
  users USER     base + a layer replacing /etc/passwd and /etc/group (daemon is uid 4321 here, not
                 the host's 1; group staff is 777) with a root-owned /data/rootfile and /data/appdir
                 owned by 4321; the config's User is USER (tests/api/users.t)
  workdir DIR    base with the config's WorkingDir DIR (tests/isolation/gvisor_workdir.t)
  gitrepo-symlink  the repository with a symlink to CANARY in its .git: --strip-history refuses it
  bomb MIB       base + a gzip layer (level 9) of one file of MIB MiB of one byte: ~1 KiB per MiB
                 (tests/api/image_bounds.t)
  bombs MIB      base + two such layers, each its own file
  bombraw MIB    base + such a layer uncompressed (the archive around it is the bomb)
  files N        base + a layer of N empty files
"""
import gzip, hashlib, io, json, os, shutil, stat, subprocess, sys, tarfile

BINS = ["/bin/true", "/usr/bin/bash", "/usr/bin/cat", "/usr/bin/ls", "/usr/bin/readlink", "/usr/bin/stat",
        "/usr/bin/du", "/usr/bin/sha256sum", "/usr/bin/id", "/usr/bin/sleep", "/usr/bin/touch",
        "/usr/bin/tr", "/usr/bin/uniq", "/usr/bin/wc"]


def host_paths(paths):
    """Every path needed to reach paths inside a root: directories, symlinks (and their targets),
    files, in an order a tar can hold."""
    seen, out = set(), []

    def add(p):
        p = os.path.normpath(p)
        if p in seen or p == "/":
            return
        parent = os.path.dirname(p)
        add(parent)
        real = os.path.join(os.path.realpath(parent), os.path.basename(p))
        if real != p:  # the parent is a link: the entry lives where it points
            add(real)
            return
        if p in seen:
            return
        seen.add(p)
        st = os.lstat(p)
        out.append(p)
        if stat.S_ISLNK(st.st_mode):
            t = os.readlink(p)
            add(t if t.startswith("/") else os.path.join(parent, t))

    for p in paths:
        add(p)
    return out


def libs_of(binary):
    res = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    libs = []
    for line in res.splitlines():
        parts = line.split()
        for x in parts:
            if x.startswith("/"):
                libs.append(x)
    return libs


def tar_bytes(add_entries, fmt=tarfile.PAX_FORMAT):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        add_entries(t)
    return buf.getvalue()


def reg(t, name, data=b"", mode=0o644, uid=0, gid=0, xattrs=None):
    ti = tarfile.TarInfo(name)
    ti.size, ti.mode, ti.uid, ti.gid, ti.mtime = len(data), mode, uid, gid, 1700000000
    if xattrs:
        ti.pax_headers = {"SCHILY.xattr." + k: v for k, v in xattrs.items()}
    t.addfile(ti, io.BytesIO(data))


def dirent(t, name, mode=0o755, uid=0, gid=0):
    ti = tarfile.TarInfo(name)
    ti.type, ti.mode, ti.uid, ti.gid, ti.mtime = tarfile.DIRTYPE, mode, uid, gid, 1700000000
    t.addfile(ti)


def link(t, name, target, hard=False):
    ti = tarfile.TarInfo(name)
    ti.type = tarfile.LNKTYPE if hard else tarfile.SYMTYPE
    ti.linkname, ti.mtime = target, 1700000000
    t.addfile(ti)


def base_layer(t):
    files = []
    for b in BINS:
        files.append(b)
        files.extend(libs_of(b))
    for p in host_paths(files):
        st = os.lstat(p)
        name = p.lstrip("/")
        if stat.S_ISLNK(st.st_mode):
            link(t, name, os.readlink(p))
        elif stat.S_ISDIR(st.st_mode):
            dirent(t, name)
        else:
            with open(p, "rb") as f:
                reg(t, name, f.read(), mode=0o755)
    link(t, "usr/bin/sh", "bash")
    dirent(t, "etc")
    reg(t, "etc/passwd", b"root:x:0:0:root:/root:/bin/bash\nsandbox:x:1000:1000::/home/sandbox:/bin/bash\n")
    dirent(t, "home/sandbox", uid=1000, gid=1000)
    dirent(t, "data")
    dirent(t, "opq")
    reg(t, "opq/old1", b"old\n")
    reg(t, "data/base-only", b"base\n")


def layer2(t):
    reg(t, "data/a", b"file a\n")
    reg(t, "data/b", b"file b\n", uid=1000, gid=1000, mode=0o640)
    dirent(t, "data/keep")
    reg(t, "data/keep/x", b"x\n")
    reg(t, "data/h1", b"linked\n")
    link(t, "data/h2", "data/h1", hard=True)
    link(t, "data/out", "/etc/../../../../host-escape")
    reg(t, "data/tagged", b"t\n", xattrs={"user.paddock.test": "yes", "user.overlay.redirect": "/x"})
    reg(t, "opq/old2", b"old\n")
    reg(t, "data/setuid", b"#!/bin/sh\n", mode=0o4755)


def layer3(t):
    reg(t, "data/.wh.a", b"")
    dirent(t, "opq")
    reg(t, "opq/.wh..wh..opq", b"")
    reg(t, "opq/new", b"new\n")
    link(t, "data/hl_lower", "data/b", hard=True)
    reg(t, "data/c", b"file c\n")


def gz(b):
    return gzip.compress(b, compresslevel=1, mtime=0)


def gz9(b):  # as small as gzip makes it: a bomb's ratio (~1000:1 for zeros)
    return gzip.compress(b, compresslevel=9, mtime=0)


def zstd(b):
    return subprocess.run(["zstd", "-q", "-c"], input=b, capture_output=True, check=True).stdout


def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def config_for(diff_ids, env=None, workdir=None, user=None, entrypoint=None, cmd=None):
    c = {"architecture": "amd64", "os": "linux",
         "config": {"Env": env or ["PATH=/usr/bin:/bin"], "Cmd": cmd if cmd is not None else ["bash"]},
         "rootfs": {"type": "layers", "diff_ids": diff_ids}}
    if entrypoint is not None:
        c["config"]["Entrypoint"] = entrypoint
    if workdir:
        c["config"]["WorkingDir"] = workdir
    if user:
        c["config"]["User"] = user
    return json.dumps(c, sort_keys=True).encode()


def write_oci(out, layers, cfg_kw, name=None, corrupt=None):
    """layers: list of (raw tar bytes, compressor or None)."""
    os.makedirs(os.path.join(out, "blobs/sha256"), exist_ok=True)

    def put(b):
        d = sha(b)
        with open(os.path.join(out, "blobs/sha256", d[7:]), "wb") as f:
            f.write(b)
        return d

    descs, diff_ids = [], []
    for raw, comp in layers:
        blob = comp(raw) if comp else raw
        mt = "application/vnd.oci.image.layer.v1.tar" + (
            "+gzip" if comp in (gz, gz9) else "+zstd" if comp is zstd else "")
        descs.append({"mediaType": mt, "digest": put(blob), "size": len(blob)})
        diff_ids.append(sha(raw))
    cfg = config_for(diff_ids, **cfg_kw)
    man = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                      "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                 "digest": put(cfg), "size": len(cfg)},
                      "layers": descs}).encode()
    md = put(man)
    desc = {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": len(man),
            "platform": {"architecture": "amd64", "os": "linux"}}
    if name:
        desc["annotations"] = {"org.opencontainers.image.ref.name": name}
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [desc]}, f)
    with open(os.path.join(out, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion": "1.0.0"}')
    if corrupt is not None:
        p = os.path.join(out, "blobs/sha256", descs[corrupt]["digest"][7:])
        with open(p, "r+b") as f:
            f.seek(-40, 2)
            last = f.read(1)
            f.seek(-40, 2)
            f.write(bytes([last[0] ^ 0xff]))
    return md


def write_docker(out, layers, cfg_kw, tag):
    """Each layer in a directory of its own, as `docker save` before Docker 25 wrote them; a layer
    met again is a symlink to the first one's tar, as docker writes it."""
    os.makedirs(out, exist_ok=True)
    paths, diff_ids, first = [], [], {}
    for i, (raw, _) in enumerate(layers):
        d = sha(raw)
        lid = hashlib.sha256(("%s %d" % (d, i)).encode()).hexdigest()
        os.makedirs(os.path.join(out, lid), exist_ok=True)
        if d in first:
            os.symlink("../%s/layer.tar" % first[d], os.path.join(out, lid, "layer.tar"))
        else:
            first[d] = lid
            with open(os.path.join(out, lid, "layer.tar"), "wb") as f:
                f.write(raw)
        paths.append(lid + "/layer.tar")
        diff_ids.append(d)
    cfg = config_for(diff_ids, **cfg_kw)
    cname = sha(cfg)[7:] + ".json"
    with open(os.path.join(out, cname), "wb") as f:
        f.write(cfg)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump([{"Config": cname, "RepoTags": [tag], "Layers": paths}], f)


def tar_dir(src, dest):
    with tarfile.open(dest, "w") as t:  # symlinks stay symlinks
        for e in sorted(os.listdir(src)):
            t.add(os.path.join(src, e), arcname=e)


_base = None


def base():
    global _base
    if _base is None:
        _base = tar_bytes(base_layer)
    return _base


SKIP_STDLIB = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data",
               "site-packages", "dist-packages"}


def python_layer(t):
    exe = os.path.realpath("/usr/bin/python3")
    files = ["/usr/bin/python3", exe] + libs_of(exe)
    for p in host_paths(files):
        st = os.lstat(p)
        name = p.lstrip("/")
        if stat.S_ISLNK(st.st_mode):
            link(t, name, os.readlink(p))
        elif stat.S_ISDIR(st.st_mode):
            pass  # the base layer holds the directories
        else:
            with open(p, "rb") as f:
                reg(t, name, f.read(), mode=0o755)
    lib = "/usr/lib/python%d.%d" % sys.version_info[:2]
    t.add(lib, arcname=lib.lstrip("/"),
          filter=lambda ti: None if os.path.basename(ti.name) in SKIP_STDLIB or ti.name.startswith(
              lib.lstrip("/") + "/config-") else ti)


CALC_BUG = b"""def add(a, b):
    return a - b


def mul(a, b):
    return a * b
"""
CALC_FIX = CALC_BUG.replace(b"a - b", b"a + b")
VISIBLE_TEST = b"""import unittest
from calc import add


class TestAdd(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)
"""
HIDDEN_TEST = b"""import unittest
from calc import add, mul


class TestHidden(unittest.TestCase):
    def test_add_negative(self):
        self.assertEqual(add(-2, -3), -5)

    def test_mul(self):
        self.assertEqual(mul(3, 4), 12)
"""


def repo_layer(t):
    # owned by the image's user, root (it sets no User): the agent's programs run as that root
    # without capabilities, and the file API acts with the same rights (docs/security.md)
    dirent(t, "repo")
    reg(t, "repo/calc.py", CALC_BUG)
    reg(t, "repo/test_calc.py", VISIBLE_TEST)
    reg(t, "repo/README", b"calc: add is wrong (issue 1)\n")


LAYERED_CFG = {"env": ["PATH=/usr/bin:/bin", "FOO=from-image"], "workdir": "/data"}


def git_layer(t):
    for p in host_paths(["/usr/bin/git"] + libs_of("/usr/bin/git")):
        st = os.lstat(p)
        name = p.lstrip("/")
        if stat.S_ISLNK(st.st_mode):
            link(t, name, os.readlink(p))
        elif not stat.S_ISDIR(st.st_mode):
            with open(p, "rb") as f:
                reg(t, name, f.read(), mode=0o755)


def git_repo(out, symlink=None):
    """A repository at the task's commit, with the future (the fix) still inside its .git."""
    d = out + ".repo"
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=d + ".home", GIT_AUTHOR_NAME="t",
               GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    g = lambda *a: subprocess.run(["git", "-C", d] + list(a), check=True, env=env, capture_output=True).stdout
    os.makedirs(d)
    g("init", "-q", "-b", "main")
    with open(d + "/calc.py", "wb") as f:
        f.write(CALC_BUG)
    g("add", "calc.py")
    g("commit", "-q", "-m", "the task's commit")
    task = g("rev-parse", "HEAD").strip().decode()
    with open(d + "/calc.py", "wb") as f:
        f.write(CALC_FIX)
    g("commit", "-q", "-am", "the future: fix add")
    future = g("rev-parse", "HEAD").strip().decode()
    g("tag", "v2")
    g("branch", "future")
    g("reset", "-q", "--hard", task)
    subprocess.run(["git", "-C", d, "hash-object", "-w", "--stdin"], input=b"a stray fix\n", check=True, env=env,
                   capture_output=True)
    for name, val in (("task", task), ("future", future)):
        with open("%s.%s" % (out, name), "w") as f:
            f.write(val + "\n")

    def ent(t):
        t.add(d, arcname="repo", filter=lambda ti: (setattr(ti, "uid", 1000), setattr(ti, "gid", 1000),
                                                   setattr(ti, "uname", ""), setattr(ti, "gname", ""), ti)[-1])
    if symlink:  # a link in .git a host process must not follow
        os.symlink(symlink, d + "/.git/objects/info/packs")
    layer = tar_bytes(ent)
    shutil.rmtree(d)
    return layer


def main():
    scen, out = sys.argv[1], sys.argv[2]
    canary = sys.argv[3] if len(sys.argv) > 3 else "/nonexistent"
    layered = [(base(), gz), (tar_bytes(layer2), gz), (tar_bytes(layer3), zstd)]
    if scen == "layered":
        write_oci(out, layered, LAYERED_CFG, name="layered:1")
    elif scen == "layered-tar":
        tmp = out + ".d"
        write_oci(tmp, layered, LAYERED_CFG)
        tar_dir(tmp, out)
        shutil.rmtree(tmp)
    elif scen == "docker":
        tmp = out + ".d"
        empty = tar_bytes(lambda t: None)
        write_docker(tmp, layered + [(empty, None), (empty, None)], LAYERED_CFG, "docker-layered:latest")
        tar_dir(tmp, out)
        shutil.rmtree(tmp)
    elif scen == "other":
        write_oci(out, [(base(), gz), (tar_bytes(lambda t: reg(t, "data/other", b"other\n")), gz)], {})
    elif scen == "many":  # OUT/img-1 ... OUT/img-N, each the base and a layer of its own
        for i in range(1, int(sys.argv[3]) + 1):
            write_oci("%s/img-%d" % (out, i), [(base(), gz), (tar_bytes(lambda t: reg(t, "data/task", b"%d" % i)), gz)], {})
    elif scen == "dotdot":
        write_oci(out, [(base(), gz), (tar_bytes(lambda t: reg(t, "data/../../" + os.path.basename(canary), b"x")), None)], {})
    elif scen == "absolute":
        write_oci(out, [(tar_bytes(lambda t: reg(t, canary, b"x")), None)], {})
    elif scen == "symlink":
        def ent(t):
            link(t, "esc", canary)
            reg(t, "esc/pwned", b"pwned\n")
        write_oci(out, [(base(), gz), (tar_bytes(ent), None)], {})
    elif scen == "device":
        def ent(t):
            ti = tarfile.TarInfo("dev-null")
            ti.type, ti.devmajor, ti.devminor, ti.mode = tarfile.CHRTYPE, 1, 3, 0o666
            t.addfile(ti)
        write_oci(out, [(tar_bytes(ent), None)], {})
    elif scen == "corrupt":
        write_oci(out, layered, LAYERED_CFG, corrupt=1)
    elif scen == "sparse":
        tmp = out + ".src"
        os.makedirs(os.path.join(tmp, "data"))
        with open(os.path.join(tmp, "data/sparse"), "wb") as f:
            f.truncate(1 << 30)
            f.seek(512 << 20)
            f.write(b"middle")
        subprocess.run(["tar", "-S", "--format=pax", "-C", tmp, "-cf", out + ".layer", "data"], check=True)
        with open(out + ".layer", "rb") as f:
            raw = f.read()
        os.unlink(out + ".layer")
        shutil.rmtree(tmp)
        write_oci(out, [(base(), gz), (raw, gz)], {})
    elif scen == "pyrepo":  # and next to it the fix and the hidden test, for the judge
        write_oci(out, [(base(), gz), (tar_bytes(python_layer), None), (tar_bytes(repo_layer), gz)],
                  {"env": ["PATH=/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1"], "workdir": "/repo"},
                  name="pyrepo:commit-1")
        with open(out + ".fix.py", "wb") as f:
            f.write(CALC_FIX)
        with open(out + ".hidden_test.py", "wb") as f:
            f.write(HIDDEN_TEST)
    elif scen == "gitrepo":
        write_oci(out, [(base(), gz), (tar_bytes(git_layer), None), (git_repo(out), gz)],
                  {"env": ["PATH=/usr/bin:/bin"], "workdir": "/repo"}, name="gitrepo:task")
    elif scen in ("bomb", "bombs", "bombraw"):
        mib = int(sys.argv[3])
        def zeros(name):
            def ent(t):
                ti = tarfile.TarInfo(name)
                ti.size, ti.mode, ti.mtime = mib << 20, 0o644, 1700000000
                t.addfile(ti, io.BytesIO(b"a" * (mib << 20)))  # not zeros: those unpack as holes
            return tar_bytes(ent)
        layers = [(base(), gz), (zeros("bomb"), None if scen == "bombraw" else gz9)]
        if scen == "bombs":
            layers.append((zeros("more-bomb"), gz9))
        write_oci(out, layers, {})
    elif scen == "files":
        n = int(sys.argv[3])
        def ent(t):
            dirent(t, "many")
            for i in range(n):
                reg(t, "many/f%d" % i)
        write_oci(out, [(base(), gz), (tar_bytes(ent), gz)], {})
    elif scen == "gitrepo-symlink":
        write_oci(out, [(base(), gz), (git_repo(out, symlink=canary), gz)], {})
    elif scen == "users":
        def ent(t):
            dirent(t, "etc")
            reg(t, "etc/passwd", b"root:x:0:0:root:/root:/bin/bash\ndaemon:x:4321:4322::/data/appdir:/bin/bash\n")
            reg(t, "etc/group", b"root:x:0:\ndaemon:x:4322:\nstaff:x:777:daemon\n")
            reg(t, "data/rootfile", b"root's\n", mode=0o644)
            dirent(t, "data/appdir", uid=4321, gid=4322)
        write_oci(out, [(base(), gz), (tar_bytes(ent), gz)], {"user": canary, "workdir": "/work"})
    elif scen == "workdir":  # base + WorkingDir CANARY (e.g. /work or /tmp, which the sandbox mounts)
        write_oci(out, [(base(), gz)], {"workdir": canary})
    elif scen == "entry":  # an Entrypoint and a Cmd: what an exec that names no program runs
        write_oci(out, [(base(), gz)], {"entrypoint": ["bash", "-c"], "cmd": ["echo from-cmd $0", "arg0"]})
    elif scen == "nocmd":  # neither
        write_oci(out, [(base(), gz)], {"cmd": []})
    elif scen == "toomany":
        ls = layered + [(tar_bytes(lambda t, i=i: reg(t, "data/l%d" % i, b"x")), None) for i in range(6)]
        write_oci(out, ls, LAYERED_CFG)
    else:
        sys.exit("unknown scenario " + scen)


if __name__ == "__main__":
    main()
