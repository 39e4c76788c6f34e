# TAP helpers for the shell test files. Source it, call plan N, then ok/is/like.
# sb ARGS...   runs `paddock exec --json --quiet ARGS` and keeps the JSON in $OUT, exit in $RC
# jf FIELD     a field of the last result ($OUT), e.g. jf status, jf stdout
set -u
: "${PADDOCK:=bin/paddock}"
: "${PADDOCK_BUILD:=build}"
PROBES=$PADDOCK_BUILD/probes
_n=0
_failed=0
plan() { echo "1..$1"; }
ok() {  # ok CONDITION-EXIT-STATUS DESCRIPTION  (use: ok $? "desc"  or  check cmd && ok 0 d || ok 1 d)
  _n=$((_n + 1))
  if [ "$1" = 0 ]; then echo "ok $_n - $2"; else echo "not ok $_n - $2"; _failed=$((_failed + 1)); fi
}
is() {  # is GOT WANT DESCRIPTION
  if [ "$1" = "$2" ]; then ok 0 "$3"; else ok 1 "$3"; echo "#   got:  '$1'"; echo "#   want: '$2'"; fi
}
like() {  # like GOT REGEX DESCRIPTION
  if [[ $1 =~ $2 ]]; then ok 0 "$3"; else ok 1 "$3"; echo "#   got:  '${1:0:400}'"; echo "#   want: /$2/"; fi
}
unlike() {
  if [[ $1 =~ $2 ]]; then ok 1 "$3"; echo "#   got:  '${1:0:400}'"; echo "#   must not match: /$2/"; else ok 0 "$3"; fi
}
diag() { echo "# $*"; }
# A sanitizer build (make asan: PADDOCK=build-asan/bin/paddock) writes its reports to the stderr
# of the process, which sb and sbt keep in a file: san_check FILE copies a report it finds there
# (ASan, UBSan, LeakSanitizer, TSan) to $SAN_SEEN, and the test file fails at its end
# (done_testing, iso.sh's exit) even if every check passed. A file, not a variable: sb and sbt
# also run in $(...) subshells. ($$ is the test file's shell in those too.)
SAN_SEEN=/tmp/paddock-test-san.$$
rm -f "$SAN_SEEN"
san_check() {
  grep -Eq '^==[0-9]+==ERROR: [A-Za-z]+Sanitizer|^WARNING: ThreadSanitizer|^[^ ]+:[0-9]+:[0-9]+: runtime error:' \
    "$1" 2>/dev/null || return 0
  cat "$1" >>"$SAN_SEEN"
  echo "# a sanitizer report from paddock (the file fails at its end):" >&2
  head -60 "$1" | sed 's/^/# san: /' >&2
}
# 0, or 1 (and the reports as diagnostics) when san_check saw one; removes the record
san_verdict() {
  [ -s "$SAN_SEEN" ] || { rm -f "$SAN_SEEN"; return 0; }
  echo "# sanitizer reports from paddock processes in this file: $(grep -cE '^==[0-9]+==ERROR|runtime error:|^WARNING: ThreadSanitizer' "$SAN_SEEN")"
  rm -f "$SAN_SEEN"
  return 1
}
sb() {
  OUT=$("$PADDOCK" exec --json --quiet "$@" 2>/tmp/paddock-test-stderr.$$)
  RC=$?
  san_check /tmp/paddock-test-stderr.$$
  if [ -z "$OUT" ]; then OUT='{}'; diag "paddock printed no result (exit $RC): $(head -c 300 /tmp/paddock-test-stderr.$$)"; fi
  rm -f /tmp/paddock-test-stderr.$$
}
jf() { jq -r ".$1" <<<"$OUT"; }
done_testing() { san_verdict && [ "$_failed" = 0 ]; }
