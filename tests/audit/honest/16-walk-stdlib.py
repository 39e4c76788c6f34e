# expect: pass
import os
n = sum(len(f) for _, _, f in os.walk("/usr/lib/python3.11"))
print(n > 100)
