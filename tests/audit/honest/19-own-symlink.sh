# expect: pass
echo data > /work/in.txt
ln -s /work/in.txt /work/link.txt
cat /work/link.txt
