#!/usr/bin/env bash
# Image imports are bounded (issue 39, docs/images.md "Bounds"): a gzip bomb (a 64 MiB file of
# one byte repeated, a 65 KB layer blob, built here) is refused past --max-layer-bytes, a layer of many empty
# files past --max-layer-files, two layers together past --max-image-bytes, a gzipped archive
# whose blobs unpack past it while the archive itself is unpacked, and an import that would leave
# the state directory's disk under --min-free (a 200 MiB tmpfs, so that nothing else on the host
# moves the figures) while it writes or before it starts. A refused import leaves nothing of its
# own in the store: not the bomb's layer, not the good base layer unpacked before it, no record,
# no name, nothing in tmp/. Within its bounds the same bomb is taken.
source "$(dirname "$0")/api.sh"
plan 24

export PADDOCK_STATE_DIR=$TMPD/state
STORE=$PADDOCK_STATE_DIR/images/store
MK="python3 tests/api/mkimage.py"
nlayers() { find "$STORE/layers/sha256" "$STORE/layers/chain" "$STORE/layers/flat" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
leftovers() {  # layers (with their .size files), records, names and tmp/ entries: "L R N T"
  echo "$(nlayers) $(ls -A "$STORE/images" 2>/dev/null | wc -l) $(ls -A "$STORE/names" 2>/dev/null | wc -l) $(ls -A "$STORE/tmp" 2>/dev/null | wc -l)"
}
imp() { "$PADDOCK" image import "$@" 2>"$TMPD/err"; }
err() { cat "$TMPD/err"; }

# --- a gzip bomb -----------------------------------------------------------------------------------
$MK bomb "$TMPD/bomb" 64
blob=$(jq -r '.layers[1].digest' "$TMPD/bomb/blobs/sha256/$(jq -r '.manifests[0].digest[7:]' "$TMPD/bomb/index.json")")
bytes=$(stat -c %s "$TMPD/bomb/blobs/sha256/${blob#sha256:}")
[ "$bytes" -lt 100000 ]
ok $? "the bomb: a layer blob of $bytes bytes holding a file of 64 MiB"
imp "$TMPD/bomb" --name bomb --max-layer-bytes 16M >/dev/null
is "$?" 2 "imported with --max-layer-bytes 16M: refused (exit 2)"
like "$(err)" "refused: layer $blob unpacks to more than 16777216 bytes \\(at 'bomb'; --max-layer-bytes\\)" "... naming the layer, the bound and the flag"
is "$(leftovers)" "0 0 0 0" "... and leaves no layer (not the good base unpacked before it), record, name or tmp/ entry"
used=$(du -sk "$STORE" | cut -f1)
[ "$used" -lt 1024 ]
ok $? "... the store takes ${used} KiB (not the 64 MiB the bomb unpacks to)"

imp "$TMPD/bomb" --name bomb --max-layer-bytes 65M >/dev/null
is "$?" 0 "the same image within --max-layer-bytes 65M: taken (the bound counts file data: 64 MiB) ($(err))"
is "$(sed -n 2p "$STORE/layers/sha256/${blob#sha256:}.size")" 1 "its layer's .size records its entries (1)"
"$PADDOCK" image rm bomb >/dev/null 2>&1 && "$PADDOCK" image gc >/dev/null 2>&1
is "$(leftovers)" "0 0 0 0" "(removed again: rm, gc)"

# --- many files ------------------------------------------------------------------------------------
$MK files "$TMPD/files" 3000
imp "$TMPD/files" --max-layer-files 1000 >/dev/null
is "$?" 2 "a layer of 3,001 entries with --max-layer-files 1000: refused"
like "$(err)" "refused: layer sha256:[0-9a-f]{64} holds more than 1000 entries \\(at 'many/f[0-9]+'; --max-layer-files\\)" "... saying so"
is "$(leftovers)" "0 0 0 0" "... leaving nothing"
imp "$TMPD/files" --max-image-files 2000 >/dev/null
like "$?:$(err)" "^2:.*refused: the image holds more than 2000 entries .*--max-image-files" \
  "the base's entries and the layer's together past --max-image-files 2000: refused"

# --- two layers: each within the layer bound, together past the image's -------------------------
$MK bombs "$TMPD/bombs" 8
imp "$TMPD/bombs" --max-layer-bytes 12M --max-image-bytes 20M >/dev/null
is "$?" 2 "two 8 MiB layers (and the base) with --max-image-bytes 20M: refused"
like "$(err)" "refused: the image unpacks to more than 20971520 bytes \\(at 'more-bomb' in sha256:[0-9a-f]{64}; --max-image-bytes\\)" "... at the second layer"
is "$(leftovers)" "0 0 0 0" "... and the first two layers, taken alone, are gone with it"
D=$(imp "$TMPD/bombs" --max-layer-bytes 12M --max-image-bytes 40M)
is "$?" 0 "with --max-image-bytes 40M: taken ($(err))"
"$PADDOCK" image rm "$D" >/dev/null 2>&1 && "$PADDOCK" image gc >/dev/null 2>&1

# --- the archive is the bomb: a gzipped tar of a layout with an uncompressed 64 MiB layer -----------
$MK bombraw "$TMPD/bombraw" 64
tar -C "$TMPD/bombraw" -czf "$TMPD/bombraw.tar.gz" .
imp "$TMPD/bombraw.tar.gz" --max-image-bytes 32M >/dev/null
is "$?" 2 "a $(stat -c %s "$TMPD/bombraw.tar.gz")-byte .tar.gz whose blobs unpack to 64 MiB, --max-image-bytes 32M: refused"
like "$(err)" "refused: the image unpacks to more than 33554432 bytes \\(at '(\\./)?blobs/sha256/[0-9a-f]{64}' in $TMPD/bombraw\\.tar\\.gz; --max-image-bytes\\)" \
  "... while the archive is unpacked"
is "$(leftovers)" "0 0 0 0" "... leaving nothing (the archive's copy in tmp/ removed)"

# --- the state disk's floor: a 200 MiB tmpfs ---------------------------------------------------------
mkdir -p "$TMPD/small"
mount -t tmpfs -o size=200M tmpfs "$TMPD/small"
ok $? "a 200 MiB tmpfs for the state directory"
cleanup 'umount "$TMPD/small" 2>/dev/null'
export PADDOCK_STATE_DIR=$TMPD/small/state
STORE=$PADDOCK_STATE_DIR/images/store
imp "$TMPD/bomb" --min-free 160M >/dev/null
is "$?" 2 "the 64 MiB bomb with --min-free 160M on 200 MiB: refused while it writes"
like "$(err)" "refused: the state directory's disk \\($STORE\\) has [0-9]+ bytes free, and an import must leave 167772160 \\(--min-free\\)" "... naming the floor"
used=$(df -k --output=used "$TMPD/small" | tail -1 | tr -d ' ')
is "$(leftovers)|$([ "$used" -lt 1024 ] && echo small)" "0 0 0 0|small" "... and the disk is as before (${used} KiB used)"
imp "$TMPD/bomb" --min-free 300M >/dev/null
like "$?:$(err)" "^2:.*refused: the state directory's disk .* has [0-9]+ bytes free, and an import must leave 314572800 \\(--min-free\\)" \
  "a floor above what the disk has: refused before anything is written"
