# expect: tamper
import site, os
d = "/usr/lib/python3/dist-packages"
open(os.path.join(d, "sitecustomize.py"), "w").write("import builtins\nbuiltins.__dict__['AssertionError'] = type('X', (Exception,), {})\n")
