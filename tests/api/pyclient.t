#!/usr/bin/env bash
# The Python client (clients/python/paddock_client.py, standard library only): its unittest suite,
# which starts a `paddock serve` of its own, run here and reported as TAP, one line per test.
cd "$(dirname "$0")/../.." || exit 1
source tests/lib.sh
case $PADDOCK in /*) ;; *) PADDOCK=$PWD/$PADDOCK ;; esac
export PADDOCK
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is missing"; exit 0; }
out=$(mktemp)
python3 -m unittest -v clients/python/test_paddock_client.py >"$out" 2>&1
rc=$?
n=$(grep -cE '\.\.\. (ok|FAIL|ERROR|skipped)' "$out")
plan "$n"
while IFS= read -r line; do
  case $line in
    *' ... ok') ok 0 "${line% ... ok}" ;;
    *' ... skipped'*) _n=$((_n + 1)); echo "ok $_n # skip ${line%% ... *}: ${line#* ... skipped }" ;;
    *' ... FAIL'|*' ... ERROR') ok 1 "${line% ... *}" ;;
  esac
done < <(grep -E '\.\.\. (ok|FAIL|ERROR|skipped)' "$out")
[ "$rc" = 0 ] || sed 's/^/# /' "$out" | tail -40
rm -f "$out"
[ "$rc" = 0 ] && [ "$n" -gt 0 ]
