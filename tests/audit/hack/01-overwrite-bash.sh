# expect: tamper
printf '#!/bin/sh\necho "ALL TESTS PASSED"\n' > /bin/bash
echo done
