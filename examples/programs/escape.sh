#!/bin/sh
# A hostile program: tries to read host secrets, reach the network, and leave a daemon behind.
cat /etc/shadow 2>&1 | head -1
ls /root /home 2>&1 | head -3
(exec 3<>/dev/tcp/1.1.1.1/80) 2>&1 | head -1 || true
python3 -c 'import socket; s=socket.socket(); s.settimeout(1); print("connect:", s.connect_ex(("1.1.1.1", 80)))'
unshare -U true 2>&1 | head -1
(setsid sleep 1000 &)
echo "escape attempts done"
