# expect: pass
mkdir -p /work/out/a/b
echo x > /work/out/a/b/f
mv /work/out/a /work/out/c
rm -r /work/out/c
echo ok
