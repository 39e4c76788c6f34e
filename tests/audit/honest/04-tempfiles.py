# expect: pass
import tempfile, os
with tempfile.NamedTemporaryFile("w", delete=False) as f:
    f.write("x" * 1000)
print(os.path.getsize(f.name))
os.unlink(f.name)
d = tempfile.mkdtemp()
open(d + "/a", "w").write("a")
print(os.listdir(d))
