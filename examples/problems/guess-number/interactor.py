import sys
# testlib-style interactor: interactor input tout answer; reads the candidate on stdin, answers on
# stdout; exit 0 accepted, 1 wrong.
n = int(open(sys.argv[1]).read())
for q in range(12):
    line = sys.stdin.readline()
    if not line:
        print("no guess", file=sys.stderr)
        sys.exit(1)
    g = int(line)
    if g == n:
        print("=", flush=True)
        print("found in %d" % (q + 1), file=sys.stderr)
        sys.exit(0)
    print("<" if n < g else ">", flush=True)
print("too many guesses", file=sys.stderr)
sys.exit(1)
