#!/usr/bin/env bash
# I/O limits from a template (limits.io_read_bps ...): a run through /v1/runs reads the image's files
# from disk no faster than its template allows (direct I/O, a lower bound on the time); a template
# with a malformed limit is refused when the daemon starts. The limits themselves on loop devices:
# tests/isolation/iolimits.t.
source "$(dirname "$0")/api.sh"
plan 5

# a file of the image (the host's /usr) of at least 4 MiB
BIG=$(find /usr/lib /usr/bin /usr/share -type f -size +4M 2>/dev/null | head -1)
cat >"$TMPD/tpl.json" <<'JSON'
{"templates": [
  {"name": "slowio", "language": "bash", "requires": ["bash"], "limits": {"io_read_bps": "1M"}},
  {"name": "bash", "language": "bash", "requires": ["bash"]}]}
JSON
start_daemon --templates "$TMPD/tpl.json"
ok $? "daemon started with a template limiting reads to 1 MiB/s"

post_json /v1/runs "$(jq -cn --arg f "$BIG" '{template: "slowio", cmd: ["dd", "if=\($f)", "of=/dev/null", "bs=1M", "count=3", "iflag=direct"]}')"
is "$(jb .status)" OK "slowio: dd of 3 MiB of $BIG ran"
secs=$(jb .run.stderr | sed -n 's/.* copied, \([0-9.]*\) s,.*/\1/p')
python3 -c "import sys; sys.exit(not float('${secs:-0}') >= 2)"
ok $? "and took at least 2 s ($secs s): the image's disk is throttled for it"
post_json /v1/runs "$(jq -cn --arg f "$BIG" '{template: "bash", cmd: ["dd", "if=\($f)", "of=/dev/null", "bs=1M", "count=3", "iflag=direct"]}')"
is "$(jb .status)" OK "a template without limits reads the same file ($(jb .run.stderr | tail -1))"

cat >"$TMPD/bad.json" <<'JSON'
{"templates": [{"name": "b", "language": "bash", "limits": {"io_read_bps": "100"}}]}
JSON
out=$("$PADDOCK" pool --templates "$TMPD/bad.json" 2>&1)
grep -q "io_read_bps/io_write_bps: at least 4k" <<<"$out"
ok $? "io_read_bps below a page per second is refused ($out)"
