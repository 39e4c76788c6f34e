# expect: pass
import threading
out = []
def work(i):
    out.append(sum(range(i * 1000)))
ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
[t.start() for t in ts]
[t.join() for t in ts]
print(len(out))
