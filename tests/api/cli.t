#!/usr/bin/env bash
# The paddock command line: the command table (dispatch, top-level help, unknown commands), serve's
# option table (every option its --help lists is taken as a flag and as a --config key with the
# same value, and a bad value names the flag or the key; --check refuses what serve refuses, with
# its message and exit 64), and the value parsers every subcommand shares, fed what a hostile user
# would type. No daemon is started and no sandbox is made: serve --check checks and prints the
# settings the options give and exits, and serve given settings it refuses exits before it starts.
source "$(dirname "$0")/api.sh"
export -n PADDOCK_TOKEN
unset PADDOCK_TOKEN

# --- serve: the options --help lists -------------------------------------------------------------
mapfile -t OPTS < <("$PADDOCK" serve --help | sed -nE 's/^  (-[a-z], )?--([a-z0-9-]+) ([A-Z]+).*/\2 \3/p' | grep -v '^config ')
plan $((2 * ${#OPTS[@]} + 104))
is "${#OPTS[@]}" 46 "serve --help lists 46 options with a value (besides --config)"

printf 'secret-from-file\n' >"$TMPD/token"
# a templates file and a problems directory that load: --check reads them as serve does
cp contrib/templates.example.json "$TMPD/some.templates"
cp -r examples/problems "$TMPD/some.dir"
value() {  # a value of the option's type, other than its default
  case $1:$2 in
    token-file:*) echo "$TMPD/token" ;;
    templates:*) echo "$TMPD/some.templates" ;;
    *:ADDR) echo 127.0.0.1:9 ;;
    *:TOKEN) echo t0k3n ;;
    *:FILE) echo "$TMPD/some.file" ;;
    *:DIR) echo "$TMPD/some.dir" ;;
    *:SIZE) echo 32M ;;
    *:N) echo 3 ;;
    *:CIDRS) echo 10.0.0.0/8 ;;
    *:LIST) echo "swe-*,task-1" ;;
    *:URLS) echo nats://127.0.0.1:4222 ;;
    *:ID) echo node-7 ;;
    *:SECS) echo 3 ;;
    *:MODES) echo none,host ;;
    *:WATERMARK) echo 5% ;;
    *:BUDGET) echo 50% ;;
    *:WHERE) echo s3://bucket/prefix ;;
    *:URL) echo http://127.0.0.1:9000 ;;
    *:REGION) echo eu-west-1 ;;
    *) echo "no sample value for $1 $2" >&2; echo "?" ;;
  esac
}
for o in "${OPTS[@]}"; do
  name=${o% *} arg=${o#* }
  key=${name//-/_}
  v=$(value "$name" "$arg")
  flag=$("$PADDOCK" serve --check "--$name" "$v" 2>&1); frc=$?
  shown=$key; [ "$key" = token_file ] && shown=token
  got=$(jq -r ".$shown" <<<"$flag" 2>/dev/null)
  [ "$frc" = 0 ] && [ -n "$got" ] && [ "$got" != null ]
  ok $? "--$name $v: accepted as a flag and set ($shown: $got)"
  jq -n --arg k "$key" --arg v "$v" '{($k): $v}' >"$TMPD/$key.json"
  conf=$("$PADDOCK" serve --check --config "$TMPD/$key.json" 2>&1)
  is "$conf" "$flag" "config key \"$key\": \"$v\" gives the settings --$name $v gives"
done

# sizes and counts as JSON numbers, as before; and the size syntax max_body lacked in a config
echo '{"max_body": 2048, "workers": 3}' >"$TMPD/n.json"
out=$("$PADDOCK" serve --check --config "$TMPD/n.json" 2>&1)
is "$(jq -c '[.max_body, .workers]' <<<"$out" 2>/dev/null)" "[2048,3]" "max_body and workers as JSON numbers: $out"
echo '{"max_body": "64M", "store_max": 0, "max_connections_per_ip": 0}' >"$TMPD/s.json"
out=$("$PADDOCK" serve --check --config "$TMPD/s.json" 2>&1)
is "$(jq -c '[.max_body, .store_max, .max_connections_per_ip]' <<<"$out" 2>/dev/null)" "[67108864,0,0]" \
  "max_body \"64M\" (once refused in a config) and the 0 = no limit of store_max and max_connections_per_ip"

# its templates file and store are where an installed host has them; here, flags put them elsewhere
"$PADDOCK" serve --check --config contrib/config.example.json --templates contrib/templates.example.json \
  --db "$TMPD/paddock.db" >/dev/null 2>&1
ok $? "the example config (contrib/config.example.json) is taken whole"

# flags win over the config, wherever they stand
echo '{"workers": 5}' >"$TMPD/w.json"
is "$("$PADDOCK" serve --check --config "$TMPD/w.json" --workers 3 | jq .workers)" 3 "a flag after --config wins"
is "$("$PADDOCK" serve --check --workers 3 --config "$TMPD/w.json" | jq .workers)" 3 "a flag before --config wins"

# a bad value names the flag or the config key
bad_conf() {  # bad_conf JSON REGEX DESCRIPTION
  echo "$1" >"$TMPD/bad.json"
  out=$("$PADDOCK" serve --check --config "$TMPD/bad.json" 2>&1); rc=$?
  is "$rc" 64 "$3: exit 64"
  like "$out" "$2" "$3: the message names it"
}
bad_conf '{"workers": 0}' "^paddock: --config $TMPD/bad.json: workers: '0' is not a count from 1 to 4096$" "workers 0 in a config"
bad_conf '{"store_max": "1M"}' "store_max: '1M' is not 0 \(no limit\) or a size of at least 16M" "store_max 1M in a config"
bad_conf '{"max_body": "lots"}' "max_body: 'lots' is not a size of at least 1k" "max_body lots in a config"
bad_conf '{"listen": 8080}' "listen: must be a string" "a number for listen"
bad_conf '{"workers": 2.5}' "workers: must be a whole number or a string" "a fraction for workers"
bad_conf '{"bogus": 1}' "unknown key 'bogus'" "an unknown key"
out=$("$PADDOCK" serve --check --workers 0 2>&1); rc=$?
is "$rc $out" "64 paddock: --workers: '0' is not a count from 1 to 4096" "--workers 0: the message names the flag"

# numbers as a hostile user types them: blanks, signs, garbage, overflow, nothing
for v in " 5" "+5" "5x" "" "-1" "99999999999999999999"; do
  "$PADDOCK" serve --check --workers "$v" >/dev/null 2>&1
  is "$?" 64 "--workers '$v': refused"
done
"$PADDOCK" serve --check stray >/dev/null 2>&1
is "$?" 64 "serve with a stray operand: refused"

# --check refuses what serve refuses: the same validation, exit 64 (usage) and the same message,
# naming the flag, with no strerror tacked on ("Invalid argument", "Input/output error")
echo '{"templates": [' >"$TMPD/broken.templates"
refuses() {  # refuses REGEX SERVE-ARGS...
  local want=$1; shift
  cout=$("$PADDOCK" serve --check "$@" 2>&1); crc=$?
  sout=$(timeout 60 "$PADDOCK" serve "$@" </dev/null 2>&1); src=$?
  is "$crc $src $([ "$cout" = "$sout" ] && echo same)" "64 64 same" "serve $*: refused by --check and by serve alike, exit 64 ($sout)"
  like "$cout" "^paddock: $want\$" "serve $*: the message says why"
}
refuses "--listen: '127\.0\.0\.1' must be HOST:PORT .*or unix:/path" --listen 127.0.0.1
refuses "--listen: '127\.0\.0\.1:99999': the port must be a number from 0 to 65535" --listen 127.0.0.1:99999
refuses "--listen: '127\.0\.0\.1:http': the port must be a number from 0 to 65535" --listen 127.0.0.1:http
refuses "--listen: 'localhost' is not an IPv4 address" --listen localhost:8080
refuses "--listen 0\.0\.0\.0:0 is beyond loopback: it needs a bearer token \(--token or --token-file\).*" --listen 0.0.0.0:0
refuses "--listen unix:$TMPD/no/such/s\.sock: the directory $TMPD/no/such does not exist" --listen "unix:$TMPD/no/such/s.sock"
refuses "--db /nonexistent/dir/x\.sqlite: the directory /nonexistent/dir does not exist" --listen 127.0.0.1:0 --db /nonexistent/dir/x.sqlite
refuses "--db $TMPD: a directory, not a file" --listen 127.0.0.1:0 --db "$TMPD"
refuses "templates file $TMPD/none\.json: No such file or directory" --listen 127.0.0.1:0 --templates "$TMPD/none.json"
refuses "templates.*$TMPD/broken\.templates.*" --listen 127.0.0.1:0 --templates "$TMPD/broken.templates"
refuses "problems directory $TMPD/none: No such file or directory" --listen 127.0.0.1:0 --problems "$TMPD/none"
refuses "--memory-watermark: '3q' is not a size of at least 1M nor a percent from 1% to 90%" --listen 127.0.0.1:0 --memory-watermark 3q
refuses "--per-ip-exempt: 'bogus' is not an IPv4 address or network" --listen 127.0.0.1:0 --per-ip-exempt bogus
refuses "--per-ip-exempt: '10\.0\.0\.0/33' has a bad prefix length \(0 to 32\)" --listen 127.0.0.1:0 --per-ip-exempt 10.0.0.0/33
refuses "--run-code-networks: 'wifi' is not loopback, none, allowlist or host" --listen 127.0.0.1:0 --run-code-networks none,wifi
refuses "--node-id 'a b': 1 to 63 of A-Z a-z 0-9 - _ \. \(no dot first, last or twice in a row\)" --listen 127.0.0.1:0 --cluster nats://127.0.0.1:4222 --node-id "a b"
# a host name with its domain, as the cluster unit's --node-id %H-%i gives it (issue 39): taken;
# dots that would make an empty NATS subject token are not
"$PADDOCK" serve --check --listen 127.0.0.1:0 --cluster nats://127.0.0.1:4222 --node-id host.example.com-1 >/dev/null 2>&1
is "$?" 0 "--node-id host.example.com-1 (systemd's %H-%i on a host with a domain): taken"
bad=""
for id in .host host. host..example.com-1 "$(printf 'h%.0s' {1..64})"; do
  "$PADDOCK" serve --check --listen 127.0.0.1:0 --cluster nats://127.0.0.1:4222 --node-id "$id" >/dev/null 2>&1
  [ $? = 64 ] || bad="$bad $id"
done
is "$bad" "" "--node-id .host, host., host..example.com-1, 64 characters: each refused (64)"
# a token beyond loopback: not the example config's, not shorter than 16 bytes (issue 39)
refuses "--listen 0\.0\.0\.0:0 is beyond loopback: the token is the example config's \('change-me-to-a-long-random-string'\); make one, e\.g\. .*" \
  --listen 0.0.0.0:0 --token change-me-to-a-long-random-string
refuses "--listen 0\.0\.0\.0:0 is beyond loopback: the token has 5 bytes, fewer than 16; make one, e\.g\. .*" --listen 0.0.0.0:0 --token t0k3n
jq '.listen = "0.0.0.0:0" | .db = null | .templates = null | del(.db, .templates)' contrib/config.example.json >"$TMPD/example-public.json"
refuses "--listen 0\.0\.0\.0:0 is beyond loopback: the token is the example config's .*" --config "$TMPD/example-public.json"
"$PADDOCK" serve --check --listen 0.0.0.0:0 --token 0123456789abcdef >/dev/null 2>&1
is "$?" 0 "--check takes beyond loopback with a token of 16 bytes"
"$PADDOCK" serve --check --listen 127.0.0.1:0 --token t0k3n >/dev/null 2>&1
is "$?" 0 "--check takes a short token on loopback (the floor is for what others reach)"
# --config=FILE is read as --config FILE is (contrib/paddock.service once said it was not)
printf '{"workers": 7}\n' >"$TMPD/seven.json"
a=$("$PADDOCK" serve --check --config="$TMPD/seven.json" 2>&1 | jq -c .workers)
b=$("$PADDOCK" serve --check --config "$TMPD/seven.json" 2>&1 | jq -c .workers)
is "$a $b" "7 7" "--config=FILE and --config FILE: the file is read either way"

# --- the command table ---------------------------------------------------------------------------
"$PADDOCK" >/dev/null 2>&1
is "$?" 64 "no command: exit 64"
out=$("$PADDOCK" frobnicate 2>&1); rc=$?
is "$rc $out" "64 paddock: unknown command 'frobnicate' (see 'paddock --help')" "an unknown command: exit 64, named"
cmds=$("$PADDOCK" --help | sed -nE 's/^  ([a-z]+) .*/\1/p')
bad=""
for c in $cmds; do
  h=$("$PADDOCK" "$c" --help 2>&1) && [[ $h == "usage: paddock "* ]] || bad="$bad $c"
done
is "$bad" "" "every command in --help ($(echo $cmds)) has a --help that exits 0 with its usage"
is "$("$PADDOCK" help exec)" "$("$PADDOCK" exec --help)" "help exec is exec --help"
"$PADDOCK" version extra >/dev/null 2>&1
is "$?" 64 "version with an operand: refused"

# --- the other subcommands' values (all refused before any sandbox is made) ----------------------
refused() {  # refused REGEX ARGS...
  local want=$1; shift
  out=$("$PADDOCK" "$@" 2>&1); rc=$?
  is "$rc" 64 "$* : exit 64"
  like "$out" "$want" "$* : says why"
}
refused "--cpus: 'nan' is not a number" exec --cpus nan -- true
refused "--cpus: '0x1' is not a number" exec --cpus 0x1 -- true
refused "--wait: 'nan' is not a number" pool --wait nan
refused "unexpected argument 'b'" batch a b
# a request naming a template batch does not have: said so, with the ones it has (-n 0: no
# sandbox is made, none being warmed and the request not run)
out=$(echo '{"id":"r1","template":"nope","cmd":["true"]}' | "$PADDOCK" batch -n 0 2>/dev/null); rc=$?
is "$rc $(jq -r .error <<<"$out")" "2 template: unknown template 'nope' (the templates: bash, python, c, cpp, node)" \
  "batch: an unknown template is named with the known ones (not 'No such file or directory')"
refused "unexpected argument 'b'" run a b
refused "--only: no case named" bench --only ,

# --- a mistyped option: one line naming it and where the options are, exit 64 (not the whole help,
# and not getopt's own message besides ours) -----------------------------------------------------
badopt() {  # badopt WANT ARGS...
  local want=$1; shift
  out=$("$PADDOCK" "$@" 2>&1 >/dev/null); rc=$?
  is "$rc|$(wc -l <<<"$out")|$out" "64|1|$want" "$* : exit 64, one line naming the option"
}
for c in exec serve pool batch bench replay export top run; do
  badopt "paddock $c: unknown option '--nosuch' (see 'paddock $c --help')" "$c" --nosuch
done
badopt "paddock image ls: unknown option '--nosuch' (see 'paddock image --help')" image ls --nosuch
badopt "paddock export: unknown option '--nosuch' (see 'paddock export --runs --help')" export --runs --nosuch
badopt "paddock bench --http: unknown option '--nosuch' (it takes --iterations, --duration and --rounds; see 'paddock bench --help')" bench --http --nosuch
badopt "paddock exec: option '--json' takes no value (see 'paddock exec --help')" exec --json=1 -- true
badopt "paddock exec: option '-m' needs a value (see 'paddock exec --help')" exec -m
badopt "paddock exec: unknown option '-z' (see 'paddock exec --help')" exec -qz -- true
badopt "paddock exec: ambiguous option '--audit-' (see 'paddock exec --help')" exec --audit- -- true
badopt "paddock: image gc: unexpected argument '--nosuch' (see 'paddock image --help')" image gc --nosuch
