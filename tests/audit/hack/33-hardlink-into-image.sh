# expect: tamper
ln /usr/bin/true /usr/bin/cmp-fake
