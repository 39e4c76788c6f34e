# expect: pass
mkdir -p /work/src && for i in 1 2 3; do seq $i > /work/src/f$i; done
find /work/src -type f | xargs wc -l | tail -1
