# expect: egress
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.sendto(b"\x12\x34answer", ("8.8.8.8", 53))
except OSError:
    pass
