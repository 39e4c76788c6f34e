#!/usr/bin/env bash
# The files a session step changed, outside /work, /tmp and the working directory too (issue 23:
# "from the writable layer, exact"): files written, created or deleted under /etc, /usr, /opt are
# in the step's files_changed with their size and digest; a step that touches only /work lists
# only /work; a reset reports the image's entries back.
source "$(dirname "$0")/api.sh"
plan 12

start_daemon
ok $? "daemon started"
TRAJ_DIR=${PADDOCK_STATE_DIR:-/var/lib/paddock}/trajectories
sx() { post_json "/v1/sessions/$1/exec" "$2"; }
mine=()
cleanup 'for t in "${mine[@]}"; do rm -f "$TRAJ_DIR/$t.jsonl"; done'
post_json /v1/sessions '{"template":"bash"}'
S=$(jb .session_id); mine+=("$S")
changes() {  # changes REQUEST_ID: "path change type" per entry, sorted, one a line
  req GET "/v1/sessions/$S/trajectory"
  jq -r "select(.request_id == \"$1\") | .files_changed[] | [.path, .change, .type] | join(\" \")" "$BODY" | sort
}
field() {  # field REQUEST_ID PATH KEY
  req GET "/v1/sessions/$S/trajectory"
  jq -r "select(.request_id == \"$1\") | .files_changed[] | select(.path == \"$2\") | .$3" "$BODY"
}

sx "$S" '{"shell":"echo hello-usr > /usr/local/paddock-fc; echo extra >> /etc/passwd; rm /usr/bin/yes; mkdir -p /opt/fc-dir; ln -s /etc/passwd /etc/fc-link; echo w > /work/w.txt","request_id":"root"}'
is "$(jb .status)" OK "a step that writes across the root"
is "$(changes root | tr '\n' ';')" \
  "/etc/fc-link added symlink;/etc/passwd modified file;/opt/fc-dir added dir;/usr/bin/yes deleted file;/usr/local/paddock-fc added file;/work/w.txt added file;" \
  "its files_changed lists /etc, /opt and /usr too: added, modified, deleted, with types"
is "$(field root /usr/local/paddock-fc sha256)" "$(printf 'hello-usr\n' | sha256sum | cut -d' ' -f1)" "a new file's digest"
is "$(field root /usr/local/paddock-fc size)" 10 "and size"
sx "$S" '{"shell":"sha256sum < /etc/passwd | cut -d\" \" -f1; wc -c < /etc/passwd"}'
want=$(jb .stdout | tr '\n' ' ' | sed 's/ *$//')
is "$(field root /etc/passwd sha256) $(field root /etc/passwd size)" "$want" \
  "a modified image file: the digest and size of its new content"
is "$(field root /etc/fc-link sha256)" "$(printf '/etc/passwd' | sha256sum | cut -d' ' -f1)" "a symlink's digest is its target text's"

sx "$S" '{"shell":"echo again > /work/w2.txt; cat /etc/passwd >/dev/null","request_id":"work-only"}'
is "$(changes work-only)" "/work/w2.txt added file" "a step that changes only /work lists only /work (the root's changes are not repeated)"
sx "$S" '{"shell":"echo more >> /usr/local/paddock-fc; rm /etc/fc-link","request_id":"again"}'
is "$(changes again | tr '\n' ';')" "/etc/fc-link deleted symlink;/usr/local/paddock-fc modified file;" \
  "a later step: what it changed in the root since the last one"

req POST "/v1/sessions/$S/reset" -H 'X-Request-Id: reset'
is "$(changes reset | grep -v '^/work' | tr '\n' ';')" \
  "/etc/passwd modified file;/opt/fc-dir deleted dir;/usr/bin/yes added file;/usr/local/paddock-fc deleted file;" \
  "a reset reports the image's entries back and the new ones gone"
is "$(field reset /usr/bin/yes sha256)" "$(sha256sum /usr/bin/yes | cut -d' ' -f1)" "the restored file's digest is the image's"
sx "$S" '{"shell":"true","request_id":"quiet"}'
is "$(changes quiet)" "" "a step that changes nothing lists nothing"
req DELETE "/v1/sessions/$S"
