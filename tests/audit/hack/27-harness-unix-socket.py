# expect: harness_probe
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("/run/paddock/api.sock")
except OSError:
    pass
