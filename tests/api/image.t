#!/usr/bin/env bash
# Images: OCI layouts (directory and tar) and docker-save archives, built here by mkimage.py, go
# into the store under the state directory: each layer once, every blob checked against its
# digest. A sandbox of an imported image sees the layers merged as the image says (a whiteout hides
# a lower file, an opaque directory hides a lower directory's entries, hard links hold within and
# across layers), its config's Env and WorkingDir apply unless the command line says otherwise, and
# its record names the image by digest. Refused: '..' and absolute paths, a write through a
# planted symlink, device nodes, a corrupted layer, too many layers — nothing lands outside the
# store. A leased layer survives rm and gc until its sandbox is gone. Templates name images.
source "$(dirname "$0")/api.sh"
plan 81

export PADDOCK_STATE_DIR=$TMPD/state
STORE=$PADDOCK_STATE_DIR/images/store
MK="python3 tests/api/mkimage.py"
CANARY=$TMPD/canary
mkdir -p "$CANARY"
nlayers() { find "$STORE/layers/sha256" "$STORE/layers/chain" "$STORE/layers/flat" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l; }
img() { "$PADDOCK" image "$@" 2>"$TMPD/img.err"; }
err() { cat "$TMPD/img.err"; }

# --- an OCI layout directory ------------------------------------------------------------------
$MK layered "$TMPD/layered"
want=$(jq -r '.manifests[0].digest' "$TMPD/layered/index.json")
D=$(img import "$TMPD/layered" --name layered)
is "$?" 0 "import an OCI layout directory: exit 0 ($(err))"
is "$D" "$want" "it prints the manifest digest of the index"
is "$(nlayers)" 3 "three layers stored"
[ "$(stat -c %a "$STORE")" = 700 ]
ok $? "the store is 0700 (layers keep the image's owners and setuid bits)"

sb --image layered -- bash -c 'ls /data | tr "\n" " "; echo; ls /opq | tr "\n" " "; echo; pwd; echo "FOO=$FOO"'
is "$(jf status)" OK "a sandbox of the imported image runs bash from its base layer"
is "$(jf stdout)" "b base-only c h1 h2 hl_lower keep out setuid tagged 
new 
/data
FOO=from-image" "merged view: the whiteout hides data/a, the opaque dir hides opq/old*, WorkingDir and Env apply"
sb --image layered --user 1000 -- bash -c 'cat /data/hl_lower; stat -c "%i %h" /data/h1 /data/h2 | uniq | wc -l; stat -c %u:%g:%a /data/b; readlink /data/out'
is "$(jf stdout)" "file b
1
1000:1000:640
/etc/../../../../host-escape" "a hard link to a lower layer's file reads it; h1 and h2 are one inode; owner and mode kept; the out-of-root symlink is kept as a link"
sb --image layered --cwd / --env FOO=mine -- bash -c 'pwd; echo "FOO=$FOO PATH=$PATH"'
is "$(jf stdout)" "/
FOO=mine PATH=/usr/bin:/bin" "--cwd and --env win over the image's WorkingDir and Env (its other variables stay)"
is "$(jq -r '.image.name + " " + .image.digest' <<<"$OUT")" "layered $D" "exec --json: image.name and image.digest (the manifest's)"
like "$(jq -r .image.config_digest <<<"$OUT")" '^sha256:[0-9a-f]{64}$' "exec --json: image.config_digest"
sb --image "$D" -- cat /data/c
is "$(jf stdout)" "file c" "--image DIGEST works"
is "$(jq -r '.image.name // "none"' <<<"$OUT")" none "... and the record has no name then"
sb --image "${D:7:12}" -- cat /data/c
is "$(jf stdout)" "file c" "--image with a 12-digit digest prefix works"
sb -- true
is "$(jq -c .image <<<"$OUT")" '{"name":"host","digest":null}' "the host image's record says so, with no digest"
base=$(jq -r .layers[0].dir "$STORE/images/${D:7}.json")
OUT=$(cd "$STORE/layers" && "$PADDOCK" exec --json --quiet --image "$base" -- cat /data/base-only 2>/dev/null)
is "$(jq -r '.stdout + " " + .image.name + " " + (.image.digest // "null")' <<<"$OUT")" "base
 $base null" "a relative directory that names no image is a plain directory, as before"

python3 - "$STORE" >"$TMPD/xattrs" <<'EOF'
import glob, os, sys
f = glob.glob(sys.argv[1] + "/layers/sha256/*/data/tagged")[0]
print(" ".join(sorted(os.listxattr(f))))
o = glob.glob(sys.argv[1] + "/layers/chain/*/opq")[0]
print(os.getxattr(o, "user.overlay.opaque").decode())
EOF
is "$(cat "$TMPD/xattrs")" "user.paddock.test
y" "user xattrs are kept but user.overlay.* from the image; the opaque dir carries user.overlay.opaque=y"
ls -l "$STORE"/layers/chain/*/data/a | grep -q '^c.* 0, *0 '
ok $? "the whiteout is stored as a 0/0 character device (what overlayfs reads)"

# --- the same image as a tar, and as a docker-save archive -------------------------------------
$MK layered-tar "$TMPD/layered.tar"
D2=$(img import "$TMPD/layered.tar" --name layered-tar)
is "$?:$D2" "0:$D" "the same image from an OCI tar: same digest ($(err))"
is "$(nlayers)" 3 "... and no layer stored twice"
is "$(ls "$STORE/tmp" | wc -l)" 0 "the tar's unpacked copy is gone"
$MK docker "$TMPD/docker.tar"
DD=$(img import "$TMPD/docker.tar")
is "$?" 0 "import a docker-save archive ($(err))"
like "$(img ls)" "docker-layered:latest +$(cut -c1-19 <<<"$DD")" "its RepoTags name it when --name is not given"
sb --image docker-layered:latest -- bash -c 'ls /data | tr "\n" " "; ls /opq'
is "$(jf stdout)" "b base-only c h1 h2 hl_lower keep out setuid tagged new" "the docker archive's sandbox sees the same merged view"
is "$(img inspect docker-layered:latest | jq '.layers | length')" 5 "... of its five layers (the second empty one a symlink to the first's tar in the archive)"

# --- a second image shares the base layer ------------------------------------------------------
before=$(nlayers)
$MK other "$TMPD/other"
DO=$(img import "$TMPD/other" --name other)
is "$?" 0 "import a second image on the same base ($(err))"
is "$(($(nlayers) - before))" 1 "only its own layer is stored: the base is shared"
base_dirs=$(jq -r '.layers[0].dir' "$STORE/images/${D:7}.json" "$STORE/images/${DO:7}.json" | sort -u | wc -l)
is "$base_dirs" 1 "both records point at the one base directory"

# --- refused ----------------------------------------------------------------------------------
before=$(nlayers)
refused() {  # refused SCENARIO REGEX DESCRIPTION
  rm -rf "$TMPD/$1"
  $MK "$1" "$TMPD/$1" "$CANARY/c-$1"
  img import "$TMPD/$1" --name "$1" >/dev/null
  local rc=$?
  is "$rc" 2 "$3: refused (exit 2)"
  like "$(err)" "$2" "... saying why"
}
refused dotdot "path 'data/\.\./\.\./c-dotdot' leaves the layer" "a '..' path"
refused absolute "path '/.*c-absolute' leaves the layer" "an absolute path"
refused symlink "'esc/pwned' goes through a symlink" "a write through a symlink planted earlier in the layer (to a host path)"
refused device "device node 'dev-null'" "a character device"
refused corrupt "layer sha256:[0-9a-f]{64} is corrupted" "a corrupted layer whose correct copy is already stored"
is "$(find "$TMPD" -name 'c-*' -o -name pwned | wc -l)" 0 "nothing named by a refused layer exists anywhere (canary)"
is "$(nlayers)" "$before" "no layer stored by a refused import"
is "$(ls "$STORE/tmp" | wc -l)" 0 "no unpacked leftovers"
PADDOCK_STATE_DIR=$TMPD/state-b "$PADDOCK" image import "$TMPD/corrupt" >/dev/null 2>"$TMPD/img.err"
is "$?" 2 "a corrupted layer in an empty store: refused while unpacking"
like "$(err)" "is corrupted: its content hashes to" "... saying why"
is "$(ls -A "$TMPD/state-b/images/store/images")" "" "... and no record written"
is "$(find "$TMPD/state-b/images/store/layers" "$TMPD/state-b/images/store/tmp" -mindepth 2 -maxdepth 2 | wc -l)" 0 \
  "the good layers it unpacked before the bad one went with it (no gc needed)"

# --- more layers than a sandbox stacks ---------------------------------------------------------
before=$(nlayers)
$MK toomany "$TMPD/toomany"
DT=$(img import "$TMPD/toomany" --name toomany)
is "$?" 0 "import an image of 9 layers ($(err))"
is "$(img inspect toomany | jq -c '[(.layers | length), (.stack | length), (.stack[0] | startswith("flat/"))]')" "[9,7,true]" \
  "its lowest 3 layers are flattened into one: a stack of 7"
is "$(($(nlayers) - before))" 7 "six new layers stored, and the flattened one (the three below are the layered image's)"
sb --image toomany -- bash -c 'echo /data/* /opq/*'
is "$(jf stdout)" "/data/b /data/base-only /data/c /data/h1 /data/h2 /data/hl_lower /data/keep /data/l0 /data/l1 /data/l2 /data/l3 /data/l4 /data/l5 /data/out /data/setuid /data/tagged /opq/new" \
  "the sandbox sees all nine merged: the flattened whiteout and opaque dir applied"
flat=$(img inspect toomany | jq -r .stack[0])
is "$(stat -c %i "$STORE/layers/$flat/data/base-only")" "$(stat -c %i "$STORE/layers/$(jq -r .layers[0].dir "$STORE/images/${D:7}.json")/data/base-only")" "the flattened layer's files are hard links to the stored layers' (no copy)"

# --- a 1 GiB sparse file ----------------------------------------------------------------------
$MK sparse "$TMPD/sparse"
img import "$TMPD/sparse" --name sparse >/dev/null
is "$?" 0 "import a layer holding a 1 GiB sparse file ($(err))"
kib=$(du -k "$STORE"/layers/sha256/*/data/sparse | cut -f1)
[ "$kib" -lt 1024 ]
ok $? "stored sparse: $kib KiB on disk"
sb --image sparse -- stat -c %s /data/sparse
is "$(jf stdout)" 1073741824 "the sandbox sees 1 GiB"

# --- ls, inspect -------------------------------------------------------------------------------
like "$(img ls)" "layered layered-tar +sha256:${D:7:12}.* 3 " "ls: names, digest, layers"
j=$(img inspect layered)
is "$(jq -r '.digest + " " + (.names | join(",")) + " " + .config.WorkingDir + " " + (.layers | length | tostring)' <<<"$j")" \
  "$D layered,layered-tar /data 3" "inspect NAME: digest, names, WorkingDir, layers"
is "$(img inspect "$D" | jq -r .manifest.config.digest)" "$(jq -r .config_digest <<<"$j")" "inspect DIGEST: the manifest as imported"
img inspect nosuch >/dev/null
is "$?" 2 "inspect of an unknown name: exit 2"
like "$(err)" "no such image" "... saying so"

# --- templates -----------------------------------------------------------------------------------
cat >"$TMPD/tpl.json" <<EOF
{"templates": [{"name": "img", "image": "layered", "requires": ["bash"]},
               {"name": "needs", "image": "layered", "requires": ["python3"]},
               {"name": "gone", "image": "nosuch"},
               {"name": "bydigest", "image": "$D", "requires": ["cat"]}]}
EOF
pj=$("$PADDOCK" pool --templates "$TMPD/tpl.json" --json 2>/dev/null)
is "$(jq -r 'select(.template=="img" or .template=="bydigest") | .available' <<<"$pj" | sort -u)" true "a template naming an image by name or digest: available (requires found in its layers)"
is "$(jq -r 'select(.template=="needs") | .available, .missing' <<<"$pj" | tr '\n' ' ')" "false python3 " "requires checked against the image: python3 missing"
like "$(jq -r 'select(.template=="gone") | .missing' <<<"$pj")" "image nosuch: .*no such image" "an unknown image: unavailable, saying so"
like "$(img ls --templates "$TMPD/tpl.json")" "layered layered-tar .* img,needs,bydigest" "ls --templates: which templates use each image"
mkdir -p "$TMPD/probs/a/tests" "$TMPD/probs/b/tests" "$TMPD/probs/c/tests"
echo '{"id":"pa","image":"layered"}' >"$TMPD/probs/a/problem.json"
echo "{\"id\":\"pb\",\"version\":\"2\",\"image\":\"${D:7:16}\"}" >"$TMPD/probs/b/problem.json"
echo '{"id":"pc"}' >"$TMPD/probs/c/problem.json"
for p in a b c; do echo 1 >"$TMPD/probs/$p/tests/1.in"; echo 1 >"$TMPD/probs/$p/tests/1.ans"; done
like "$(img ls --templates "$TMPD/tpl.json" --problems "$TMPD/probs")" "layered layered-tar .* img,needs,bydigest +pa@1,pb@2" \
  "ls --problems: which problems use each image (by name, by a digest prefix; not one naming none)"
j=$(img inspect --templates "$TMPD/tpl.json" --problems "$TMPD/probs" layered)
is "$(jq -r '(.templates | join(",")) + " " + (.problems | join(",")) + " " + .digest' <<<"$j")" "img,needs,bydigest pa@1,pb@2 $D" \
  "inspect --templates --problems: the record with the templates and problems that use the image"
is "$(img inspect --problems "$TMPD/probs" layered | jq -c '.templates')" "[]" "inspect without --templates: no template named"
start_daemon --templates "$TMPD/tpl.json"
post_json /v1/runs '{"template":"img","cmd":["bash","-c","ls /data | tr \"\\n\" \" \"; echo $FOO; pwd"]}'
is "$(jb .status) $(jb .run.stdout)" "OK b base-only c h1 h2 hl_lower keep out setuid tagged from-image
/data" "the daemon runs a template's image, its Env and WorkingDir applied"
is "$(jb '.run.image.name + " " + .run.image.digest')" "layered $D" "/v1/runs: the run's record names the image and its digest"
stop_daemon

# --- concurrent imports into one store ------------------------------------------------------------
$MK many "$TMPD/many" 6
pids=()
for i in 1 2 3 4 5 6; do
  PADDOCK_STATE_DIR=$TMPD/state-c "$PADDOCK" image import "$TMPD/many/img-$i" --name "m$i" >/dev/null 2>"$TMPD/many.$i.err" &
  pids+=($!)
done
fails=0
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
is "$fails" 0 "six imports of images on one base at once all succeed $(cat "$TMPD"/many.*.err | grep -v imported | head -c 300)"
is "$(find "$TMPD/state-c/images/store/layers/sha256" -mindepth 1 -maxdepth 1 -type d | wc -l):$(ls "$TMPD/state-c/images/store/tmp" | wc -l)" "7:0" \
  "... storing the base once and each image's own layer, with nothing left over"

# --- leases, rm, gc ------------------------------------------------------------------------------
mkdir -p "$TMPD/sig" && chmod 1777 "$TMPD/sig"
"$PADDOCK" exec --json --quiet --image other --bind "$TMPD/sig:/sig:rw" -- \
  bash -c 'touch /sig/started; while [ ! -e /sig/go ]; do sleep 0.05; done; cat /data/other' >"$TMPD/held.json" 2>&1 &
held=$!
wait_for 30 test -e "$TMPD/sig/started"
ok $? "a sandbox of image 'other' is running"
img rm other
is "$?" 0 "rm other: its last name, so its record goes ($(err))"
img inspect other >/dev/null
is "$?" 2 "... it is no longer in the store"
img gc >/dev/null
other_layer=$(python3 -c "import json,hashlib; m=json.load(open('$TMPD/other/blobs/sha256/'+json.load(open('$TMPD/other/index.json'))['manifests'][0]['digest'][7:])); print(m['layers'][1]['digest'][7:])")
[ -d "$STORE/layers/sha256/$other_layer" ]
ok $? "gc keeps the unreferenced layer a running sandbox still leases"
touch "$TMPD/sig/go"
wait "$held"
is "$(jq -r .stdout "$TMPD/held.json")" "other" "the sandbox read its layer to the end"
like "$(img gc)" "removed 1 layers" "gc once the sandbox is gone: the layer is removed"
[ ! -e "$STORE/layers/sha256/$other_layer" ] && [ -d "$STORE/$(jq -r '.layers[0].dir' "$STORE/images/${D:7}.json" | sed 's|^|layers/|')" ]
ok $? "... and the shared base, still used by other images, stays"
# --- an exec that names no program: the image's Entrypoint then Cmd (docker run IMAGE) ----------
$MK entry "$TMPD/entry" && img import "$TMPD/entry" --name entry >/dev/null
sb --image entry
is "$(jf status) $(jf stdout)" "OK from-cmd arg0" "no program named: the image's Entrypoint then its Cmd run"
sb --image entry -- bash -c 'echo named'
is "$(jf status) $(jf stdout)" "OK named" "a program named runs instead (the Entrypoint is not put in front of it)"
$MK nocmd "$TMPD/nocmd" && img import "$TMPD/nocmd" --name nocmd >/dev/null
out=$("$PADDOCK" exec --image nocmd 2>&1); rc=$?
is "$rc $out" "64 paddock: exec: no program given (usage: paddock exec [options] -- PROG [ARGS...]; the image has no Entrypoint or Cmd)" \
  "an image with neither: refused, saying so"
img rm entry >/dev/null && img rm nocmd >/dev/null

img rm "$D" && img rm "$DD" && img rm sparse && img rm "$DT"
is "$?" 0 "rm by digest removes an image and all its names"
is "$(img ls | wc -l)" 1 "the store lists no image"
img gc >/dev/null
is "$(nlayers):$(ls "$STORE/blobs/sha256" | wc -l)" "0:0" "gc leaves no layer and no blob"
