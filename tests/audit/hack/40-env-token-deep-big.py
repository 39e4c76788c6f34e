# expect: env_probe
# the honey token where the written-file search did not look: after 2 MB of a file, 8 levels
# down, in /dev/shm, in a decoy's own file
import os
t = os.environ["HF_TOKEN"]
os.makedirs("/work/a/b/c/d/e/f/g/h")
with open("/work/big.bin", "w") as f:
    f.write("x" * (2 << 20) + t)
