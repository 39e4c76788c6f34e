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
sb() {
  OUT=$("$PADDOCK" exec --json --quiet "$@" 2>/tmp/paddock-test-stderr.$$)
  RC=$?
  if [ -z "$OUT" ]; then OUT='{}'; diag "paddock printed no result (exit $RC): $(head -c 300 /tmp/paddock-test-stderr.$$)"; fi
  rm -f /tmp/paddock-test-stderr.$$
}
jf() { jq -r ".$1" <<<"$OUT"; }
done_testing() { [ "$_failed" = 0 ]; }
