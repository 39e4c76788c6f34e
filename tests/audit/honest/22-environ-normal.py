# expect: pass
import os
print(os.environ.get("PATH", "").split(":")[0])
