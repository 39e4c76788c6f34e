#!/usr/bin/env bash
# POST /v1/judge with "isolation" (issue 26): the request's tier, else the problem's, over the
# candidate's template, with the rules of /v1/runs (a tier the template allows; else a 400 naming
# the field). A python submission judged under gvisor passes and fails as under container, its
# record names the tier, and a verdict judged under one tier never answers for the other.
source "$(dirname "$0")/api.sh"
[ -x /usr/bin/runsc ] || { echo "1..0 # SKIP runsc is not installed"; exit 0; }
plan 12

cat >"$TMPD/tpl.json" <<'EOT'
{"templates": [
  {"name": "python", "language": "python", "requires": ["python3"], "cwd": "/work", "pool": {"min": 1, "max": 2}},
  {"name": "conly", "requires": ["python3"], "cwd": "/work", "isolation": ["container"], "pool": {"min": 0, "max": 1}}]}
EOT
start_daemon --templates "$TMPD/tpl.json"
ok $? "daemon with a python template (every tier) and a container-only one"

sq='{"tests":[{"input":"2\n","output":"4\n"},{"input":"3\n","output":"9\n"}]}'
good='x=int(input())\nprint(x*x)'
judge() { # problem code [extra fields]
	post_json /v1/judge "$(jq -nc --argjson p "$1" --arg c "$(printf "$2")" --argjson x "${3:-{\}}" \
		'{problem: $p, language: "python", code: $c} + $x')"
}
fields='[.verdict.output.status, .isolation, .cache] | join(" ")'

judge "$sq" "$good"
is "$CODE $(jb "$fields")" "200 pass container miss" "under container: pass, the record says container"
judge "$sq" "$good" '{"isolation":"gvisor"}'
is "$CODE $(jb "$fields")" "200 pass gvisor miss" \
  "the same submission under gvisor: pass, the record says gvisor, not answered from the container's verdict"
judge "$sq" "$good" '{"isolation":"gvisor"}'
is "$(jb "$fields")" "pass gvisor hit" "again under gvisor: the gvisor verdict's cache hit"
judge "$sq" 'print(int(input())*2)' '{"isolation":"gvisor"}'
is "$(jb '[.verdict.output.status, .tests[0].status, .tests[1].status, .isolation] | join(" ")')" "partial AC WA gvisor" \
  "a wrong submission under gvisor fails its test as under container"

# what tells the tiers apart from inside: gVisor's kernel names itself in dmesg
probe='import subprocess\nr = subprocess.run(["sh", "-c", "dmesg 2>/dev/null"], capture_output=True, text=True)\nprint("gvisor" if "gvisor" in r.stdout.lower() else "linux")'
pk='{"tests":[{"input":"","output":"gvisor\n"}]}'
judge "$pk" "$probe" '{"isolation":"gvisor","cache":false}'
is "$(jb '[.verdict.output.status, .isolation] | join(" ")')" "pass gvisor" "the candidate ran under gVisor's kernel"
judge "$pk" "$probe" '{"cache":false}'
is "$(jb '[.verdict.output.status, .tests[0].status, .isolation] | join(" ")')" "fail WA container" "... and without it, under Linux's"
judge "$(jq -c '. + {isolation: "gvisor"}' <<<"$pk")" "$probe" '{"cache":false}'
is "$CODE $(jb '[.verdict.output.status, .isolation] | join(" ")')" "200 pass gvisor" "a problem's own isolation: gvisor"

judge "$sq" "$good" '{"isolation":"vm"}'
is "$CODE $(jb .error)" "400 isolation: must be container or gvisor" "an unknown tier: 400 naming the field"
judge "$(jq -c '. + {template: "conly"}' <<<"$sq")" "$good" '{"isolation":"gvisor"}'
is "$CODE $(jb .error)" "400 isolation: template 'conly' allows container, not gvisor" \
  "a tier the candidate's template does not allow: 400 naming the field"
judge "$(jq -c '. + {isolation: "kvm"}' <<<"$sq")" "$good"
is "$CODE" 400 "a problem with an unknown tier: 400"

stop_daemon
is "$(pgrep -c runsc)" 0 "no runsc of this daemon is left"
done_testing
