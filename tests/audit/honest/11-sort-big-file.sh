# expect: pass
seq 1 200000 | shuf > /tmp/big
sort -n /tmp/big | tail -1
