#!/usr/bin/env bash
# docs/internals.md stays true: its file map names every source file, its locks table every mutex.
# Needs no daemon and no build: it reads the tree and the document.
#
# The rules (what a new file or lock needs for this file to pass):
#   - Every .c and .h under lib/, pool/, server/ and cli/ (subfolders included) is named in the
#     FIRST cell of a row of its layer's file-map table (the table under the heading "### `LAYER/`"),
#     in backticks, by its path relative to the layer as the map writes it: lib/image/store.c is
#     `image/store.c` in the lib/ table, server/http/dedupe.c is `http/dedupe.c` in the server/
#     table. A mention in another row's description does not count (same-named files live in
#     several layers: exec.c, pool.c, judge.c, trajectory.c).
#   - Every name in such a first cell that ends in .c or .h is a file that exists (no stale row).
#   - Every pthread_mutex_t in those folders has a row in the table under "## Locks": a struct field
#     `mu` of `struct pd_sched` (typedef'd or not; an anonymous struct takes its typedef name) is
#     `pd_sched.mu`, a static or global mutex is its bare name (`dd_mu`). The row's first cell holds
#     that name in backticks and its second cell the file that declares it (`server/sched.c`), so two
#     structs called `batch` in two files need two rows.
#   - Every lock the table names exists in the file its row gives (no stale row).
cd "$(dirname "$0")/../.." || exit 1
source tests/lib.sh
export LC_ALL=C
DOC=docs/internals.md
plan 9

# first-cell names of the file map's table of one layer: "### `lib/`" up to the next heading
map_names() {
  awk -v h="### \`$1/\`" '
    index($0, h) == 1 { on = 1; next }
    on && /^##/ { exit }
    on && /^\|/ {
      n = split($0, cell, "|"); first = cell[2]
      k = split(first, part, "`")
      for (i = 2; i <= k; i += 2) print part[i]
    }' "$DOC"
}

for layer in lib pool server cli; do
  names=$(map_names "$layer" | sort -u)
  missing=""
  while read -r f; do
    rel=${f#"$layer"/}
    grep -qxF -- "$rel" <<<"$names" || missing+=" $f"
  done < <(find "$layer" -name '*.[ch]' -type f | sort)
  total=$(find "$layer" -name '*.[ch]' -type f | wc -l)
  is "${missing# }" "" "every source file of $layer/ ($total) has a row in the file map"
done

stale=""
for layer in lib pool server cli; do
  while read -r n; do
    [[ $n == *.[ch] ]] && [ ! -f "$layer/$n" ] && stale+=" $layer/$n"
  done < <(map_names "$layer")
done
is "${stale# }" "" "every file the map names exists"

# every mutex as FILE<TAB>NAME: struct fields as STRUCT.FIELD, file-level ones bare
mutexes() {
  find lib pool server cli -name "*.[ch]" -type f 2>/dev/null | sort | while read -r f; do
    awk -v F="$f" '
      function emit(name) { print F "\t" name }
      /^(typedef )?struct [A-Za-z_0-9]+ *\{/ { s = $0; sub(/^(typedef )?struct /, "", s); sub(/ *\{.*/, "", s); cur = s; inside = 1; next }
      /^(typedef )?struct *\{/ { cur = ""; inside = 1; next }
      inside && /^\}/ {
        if (cur == "" && match($0, /[A-Za-z_0-9]+ *;/)) { td = substr($0, RSTART, RLENGTH); sub(/ *;/, "", td)
          for (i = 1; i <= np; i++) emit(td "." pend[i]) }
        np = 0; inside = 0; cur = ""; next
      }
      /pthread_mutex_t[ \t]+[A-Za-z_]/ {
        decl = $0; sub(/.*pthread_mutex_t[ \t]+/, "", decl); sub(/[;=].*/, "", decl)
        m = split(decl, v, ",")
        for (i = 1; i <= m; i++) {
          gsub(/[ \t*]/, "", v[i]); sub(/\[.*/, "", v[i])
          if (v[i] == "") continue
          if (inside && cur != "") emit(cur "." v[i]); else if (inside) pend[++np] = v[i]; else emit(v[i])
        }
      }' "$f"
  done
}
MUTEXES=$(mutexes)
nmu=$(grep -c . <<<"$MUTEXES")
[ "$nmu" -ge 25 ]
ok $? "the scan finds the tree's mutexes ($nmu; at least the 25 the daemon and commands had on 2026-12-07)"

# the locks table's rows as NAME<TAB>ROW
lock_rows() {
  awk '/^## Locks/ { on = 1; next } on && /^## / { exit }
    on && /^\| *[`*]/ { n = split($0, cell, "|"); k = split(cell[2], part, "`")
      for (i = 2; i <= k; i += 2) print part[i] "\t" cell[3] }' "$DOC"
}
ROWS=$(lock_rows)
missing=""
while IFS=$'\t' read -r f name; do
  awk -F'\t' -v n="$name" -v f="$f" '$1 == n && index($2, "`" f "`") { found = 1 } END { exit !found }' <<<"$ROWS" ||
    missing+=" $name($f)"
done <<<"$MUTEXES"
is "${missing# }" "" "every mutex has a row in the locks table, with the file that declares it"

stale=""
while IFS=$'\t' read -r name in; do
  [ -n "$name" ] || continue
  awk -F'\t' -v n="$name" '$2 == n { found = 1 } END { exit !found }' <<<"$MUTEXES" || stale+=" $name"
done <<<"$ROWS"
is "${stale# }" "" "every lock the table names exists in the code"

# the rule itself can fail: a tree with a file the map does not name, a mutex the table lacks
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/server/http"
echo 'static pthread_mutex_t h38_probe_mu = PTHREAD_MUTEX_INITIALIZER;' >"$T/server/http/unnamed_probe.c"
names=$(map_names server)
got=$(cd "$T" && find server -name '*.[ch]' | while read -r f; do grep -qxF -- "${f#server/}" <<<"$names" || echo "$f"; done)
mu=$(cd "$T" && mutexes)
is "$got|$mu" "server/http/unnamed_probe.c|server/http/unnamed_probe.c	h38_probe_mu" \
  "the checks see a file the map does not name and its mutex"
done_testing
