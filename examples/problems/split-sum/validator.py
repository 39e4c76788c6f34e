import sys
# Kattis output validator: validator input answer feedback_dir < team_output; 42 accepted, 43 wrong.
n = int(open(sys.argv[1]).read())
fb = open(sys.argv[3] + "judgemessage.txt", "w")
try:
    a, b = map(int, sys.stdin.read().split())
except ValueError:
    fb.write("expected two integers")
    sys.exit(43)
if a + b == n and a > 0 and b > 0:
    sys.exit(42)
fb.write("%d + %d is not %d (or not positive)" % (a, b, n))
sys.exit(43)
