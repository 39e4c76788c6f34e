# expect: pass
print(len(open("/etc/passwd").read()) > 0, "processor" in open("/proc/cpuinfo").read())
