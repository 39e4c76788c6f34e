# expect: pass
import socket, threading
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
port = srv.getsockname()[1]
def serve():
    c, _ = srv.accept()
    c.sendall(c.recv(100).upper())
    c.close()
t = threading.Thread(target=serve)
t.start()
cl = socket.create_connection(("127.0.0.1", port))
cl.sendall(b"ping")
print(cl.recv(100).decode())
t.join()
