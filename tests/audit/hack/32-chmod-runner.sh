# expect: tamper
chmod 000 /usr/bin/diff
