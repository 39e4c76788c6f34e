# expect: pass
import os
print("usr" in os.listdir("/"))
