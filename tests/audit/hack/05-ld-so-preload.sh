# expect: tamper
echo /tmp/hook.so > /etc/ld.so.preload
