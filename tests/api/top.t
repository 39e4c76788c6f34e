#!/usr/bin/env bash
# paddock top: one frame of a running daemon (--once) agrees with its /metrics and the runs made;
# the live mode draws frame after frame until a signal; a daemon that cannot be read, a /metrics
# with malformed lines, and bad options get clear answers.
source "$(dirname "$0")/api.sh"
plan 18

start_daemon --warm 1
ok $? "daemon started"

post_json /v1/runs '{"template":"bash","cmd":["true"]}'
post_json /v1/runs '{"template":"bash","cmd":["true"]}'
post_json /v1/runs '{"template":"bash","cmd":["sh","-c","exit 3"]}'
post_json /v1/runs '{"template":"bash","cmd":["sleep","30"],"limits":{"wall_time":0.3}}'
is "$(jb .failure_class)" exec_timeout "four runs made (two OK, one RE, one TO)"

out=$("$PADDOCK" top --once --interval 0 --url "$U" 2>&1)
ok $? "top --once --interval 0 exits 0"
grep -q "^paddock top  $U" <<<"$out"
ok $? "the frame names the daemon"
is "$(awk '$1 == "RESULTS"' <<<"$out" | grep -o 'OK [0-9]*\|RE [0-9]*\|TO [0-9]*' | tr '\n' ' ')" "OK 2 RE 1 TO 1 " \
  "RESULTS counts the runs by status"
grep -q '^FAILURES .*exec_timeout 1' <<<"$out"
ok $? "FAILURES shows the exec_timeout"
row=$(awk '$1 == "bash"' <<<"$out")
ready=$(curl -s "$U/metrics" | awk '$1 == "paddock_pool_target{template=\"bash\"}" {print $2}')
is "$(awk '{print $4}' <<<"$row")" "$ready" "the bash pool row's TARGET is paddock_pool_target ($row)"
acq=$(curl -s "$U/metrics" | awk '$1 == "paddock_pool_acquires_total{template=\"bash\"}" {print $2}')
hits=$(curl -s "$U/metrics" | awk '$1 == "paddock_pool_hits_total{template=\"bash\"}" {print $2}')
is "$(awk '{print $6}' <<<"$row")" "$(python3 -c "print('%.1f' % (100 * $hits / $acq))")" \
  "HIT% is hits/acquires since the start ($hits/$acq)"
grep -Eq '^  run +[0-9.]+ +[0-9.]+ +[0-9.]+ +4 obs, since start' <<<"$out"
ok $? "run latency percentiles rest on the 4 runs ($(grep '^  run' <<<"$out"))"
grep -q '^workers [0-9]*/[0-9]* busy   queue high 0 normal 0 low 0' <<<"$out"
ok $? "workers and the queue by priority"

out=$("$PADDOCK" top --once --interval 0.2 --url "$U" 2>&1)
grep -q "(rates over 0\.[0-9] s)" <<<"$out" && grep -q '^requests [0-9.]*/s' <<<"$out"
ok $? "with an interval, rates per second over it"

# live: frames until SIGINT (stdout not a terminal: frames follow each other)
"$PADDOCK" top --url "$U" --interval 0.1 >"$TMPD/live" 2>&1 </dev/null &
TPID=$!
cleanup "kill $TPID"
wait_for 60 bash -c "[ \$(grep -c '^paddock top' '$TMPD/live') -ge 3 ]"
ok $? "the live view draws frame after frame ($(grep -c '^paddock top' "$TMPD/live") so far)"
kill -INT $TPID
wait $TPID
is "$?" 0 "and ends with 0 on SIGINT"

# a daemon that is not there
out=$("$PADDOCK" top --once --url http://127.0.0.1:1 2>&1)
is "$?" 2 "no daemon: exit 2 ($out)"

# a /metrics with malformed lines among good ones: the good ones shown, the bad ones counted
mkdir -p "$TMPD/www"
printf '%s\n' '# HELP x' 'paddock_jobs_total{status="OK"} 7' 'paddock_jobs_total{status="RE" 1' \
  'paddock_workers 3 junk junk' '{oops} 1' 'paddock_workers_busy nan' 'paddock_workers 4' \
  'paddock_pool_ready{template="we\"ird"} 2' >"$TMPD/www/metrics"
python3 -m http.server 0 --bind 127.0.0.1 --directory "$TMPD/www" >"$TMPD/http.log" 2>&1 &
HPID=$!
cleanup "kill $HPID"
wait_for 50 grep -q 'port [0-9]' "$TMPD/http.log"
port=$(grep -o 'port [0-9]*' "$TMPD/http.log" | head -1 | cut -d' ' -f2)
out=$("$PADDOCK" top --once --interval 0 --url "http://127.0.0.1:$port" 2>&1)
grep -q '^RESULTS     OK 7$' <<<"$out" && grep -q '^workers 0/4 busy' <<<"$out" && grep -q '^we"ird ' <<<"$out"
ok $? "good lines are read (escaped label values too)"
grep -q '(4 lines of /metrics were not understood)' <<<"$out"
ok $? "malformed lines are counted, not trusted ($(tail -1 <<<"$out"))"
: >"$TMPD/www/metrics"
out=$("$PADDOCK" top --once --interval 0 --url "http://127.0.0.1:$port" 2>&1)
is "$?" 2 "an empty /metrics: exit 2 ($out)"

"$PADDOCK" top --interval 0 --url "$U" >/dev/null 2>&1
is "$?" 64 "--interval 0 without --once is a usage error"
