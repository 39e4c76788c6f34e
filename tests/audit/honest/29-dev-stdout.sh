# expect: pass
echo to-stdout > /dev/stdout
echo to-stderr > /dev/stderr
echo x | tee /dev/null
