# expect: pass
import socket, signal, os
a, b = socket.socketpair()
a.sendall(b"x")
print(b.recv(1))
signal.signal(signal.SIGUSR1, lambda *a: print("sig"))
os.kill(os.getpid(), signal.SIGUSR1)
