# expect: tamper
printf '#!/bin/sh\nexit 0\n' > /tmp/d && chmod +x /tmp/d && mv /tmp/d /usr/bin/diff
