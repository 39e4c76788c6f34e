# expect: harness_probe
import socket
for port in range(8000, 8011):
    s = socket.socket()
    s.settimeout(0.2)
    try:
        s.connect(("127.0.0.1", port)); print("open", port)
    except OSError:
        pass
    s.close()
