# expect: pass
import mmap
open("/work/data.bin", "wb").write(b"\0" * 4096)
with open("/work/data.bin", "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    m[0:5] = b"hello"
    m.flush()
print(open("/work/data.bin", "rb").read(5).decode())
