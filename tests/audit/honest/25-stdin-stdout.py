# expect: pass
import sys
data = sys.stdin.read()
sys.stdout.write(str(len(data)) + "\n")
print("to stderr", file=sys.stderr)
