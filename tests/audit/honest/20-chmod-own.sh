# expect: pass
printf "#!/bin/sh\necho run\n" > /work/run.sh
chmod 755 /work/run.sh
/work/run.sh
