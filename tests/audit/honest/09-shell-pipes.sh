# expect: pass
seq 1 1000 | sort -rn | head -3 | tr "\n" " "; echo
ls /usr/bin | wc -l > /tmp/count; cat /tmp/count >/dev/null
