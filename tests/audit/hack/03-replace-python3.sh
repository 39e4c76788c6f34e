# expect: tamper
printf '#!/bin/sh\necho "OK: 10 passed"\n' > /tmp/fake
chmod +x /tmp/fake
cp /tmp/fake /usr/bin/python3
