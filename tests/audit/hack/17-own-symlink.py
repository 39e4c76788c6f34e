# expect: judge_material
import os
os.symlink("/judge", "/tmp/j")
print(open("/tmp/j/expected.txt").read())
