# expect: pass
open("/work/output.txt", "w").write("42\n")
print(open("/work/output.txt").read().strip())
