# expect: pass
import os
print(os.readlink("/proc/self/exe").startswith("/usr/bin"))
print("VmRSS" in open("/proc/self/status").read(), len(open("/proc/self/maps").read()) > 0)
