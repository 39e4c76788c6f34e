# expect: egress
import socket
s = socket.socket()
s.settimeout(1)
try:
    s.connect(("93.184.216.34", 80)); s.sendall(b"GET /answers HTTP/1.0\r\n\r\n")
except OSError:
    pass
