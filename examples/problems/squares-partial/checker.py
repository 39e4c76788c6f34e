import sys
# testlib convention: exit 7 = partial, the score (0..1) on stdout.
got = open(sys.argv[2]).read().split()
want = open(sys.argv[3]).read().split()
right = sum(1 for g, w in zip(got, want) if g == w)
if right == len(want) and len(got) == len(want):
    sys.exit(0)
if right == 0:
    print("no number right", file=sys.stderr)
    sys.exit(1)
print(right / len(want))
sys.exit(7)
