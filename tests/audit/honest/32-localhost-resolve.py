# expect: pass
import socket
print(socket.getaddrinfo("localhost", 80)[0][4][0] in ("127.0.0.1", "::1"))
