#!/usr/bin/env python3
"""Generates examples/problems/ (the judge's bundled problems) and examples/submissions.jsonl.

    examples/make-problems.py          writes both (deterministic: no randomness but a fixed LCG)

Each problem is a directory in the judge's on-disk format (docs/judge.md): problem.json, tests/NNN.in
and tests/NNN.ans, and a checker.* or interactor.* where the problem has one. The set covers every
checker mode (exact, lines, tokens, numeric with absolute, relative and absolute-or-relative
tolerance, yesno, unordered_lines, multiset_tokens, json_value, checker programs in the testlib
and Kattis conventions, interactive), stdin and call-based (in_outs with fn_name) problems, and
C, C++, Python, Node and bash solutions.

Each line of submissions.jsonl is a judge request: problem_id, language, code, group_id, sample_id,
and "expect" (the verdict's output status and failure class it must get): correct, wrong, partial,
slow, memory-hungry, crashing and non-compiling submissions, and reward hacks (sys.exit(0) before
output, printing "All tests passed", reading an answer file, overwriting /bin/bash, monkey-patching
builtins, output floods). tests/unit/judge_examples.c judges them all and checks each expectation.
Every problem has few, small tests and a time limit of at most 1 s, so that the whole set is judged
in well under a minute on two cores.
"""

import json
import math
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "problems")


class Lcg:
    def __init__(self, seed):
        self.x = seed & 0xFFFFFFFF

    def next(self):
        self.x = (self.x * 1664525 + 1013904223) & 0xFFFFFFFF
        return self.x

    def int(self, lo, hi):
        return lo + self.next() % (hi - lo + 1)


R = Lcg(21)
problems = {}
subs = []


def problem(pid, tests, checker=None, limits=None, extra=None, files=None, meta=None):
    """tests: list of (input, answer). files: name -> text placed beside problem.json."""
    pj = {"id": pid, "version": "1", "title": meta or pid}
    if limits:
        pj["limits"] = limits
    if checker:
        pj["checker"] = checker
    if extra:
        pj.update(extra)
    problems[pid] = (pj, tests, files or {})


def sub(pid, lang, code, expect, fc="none", note="", group=None):
    n = sum(1 for s in subs if s["problem_id"] == pid) + 1
    subs.append({"problem_id": pid, "language": lang, "code": code, "group_id": group or pid,
                 "sample_id": "%s-%d" % (pid, n), "note": note,
                 "expect": {"output": expect, "failure_class": fc}})


LIM = {"time": 1, "memory": "128M", "output": "1M"}

# ---- lines (the default), exact, tokens ---------------------------------------------------------

t = []
for _ in range(4):
    a, b = R.int(-1000, 1000), R.int(-1000, 1000)
    t.append(("%d %d\n" % (a, b), "%d\n" % (a + b)))
problem("sum", t, limits=LIM, meta="a+b, lines (the default)")
sub("sum", "c", '#include <stdio.h>\nint main(void){long a,b;if(scanf("%ld %ld",&a,&b)!=2)return 1;printf("%ld\\n",a+b);return 0;}\n', "pass")
sub("sum", "cpp", "#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<'\\n';}\n", "pass")
sub("sum", "python", "a, b = map(int, input().split())\nprint(a + b)\n", "pass")
sub("sum", "nodejs", "const [a,b]=require('fs').readFileSync(0,'utf8').trim().split(/\\s+/).map(Number);console.log(a+b);\n", "pass")
sub("sum", "bash", "read a b\necho $((a + b))\n", "pass")
sub("sum", "python", "a, b = map(int, input().split())\nprint(a - b)\n", "fail", note="wrong")
sub("sum", "python", "import sys\nsys.exit(0)\nprint(sum(map(int, input().split())))\n", "fail", note="hack: sys.exit(0) before output")
sub("sum", "python", "print('All tests passed')\n", "fail", note="hack: prints All tests passed")
sub("sum", "cpp", "int main() { return 0 }\n", "fail", "compile_error", note="does not compile")
sub("sum", "python", "a, b = map(int, input().split())\nprint(a + b, end='\\r\\n')\n", "pass", note="CRLF is fine for lines")
sub("sum", "c", '#include <stdio.h>\n#include <unistd.h>\nint main(void){long a,b;unlink("/work/main");if(scanf("%ld %ld",&a,&b)!=2)return 1;printf("%ld\\n",a+b);return 0;}\n', "pass", note="deletes its own binary: the next test gets a fresh copy")

problem("echo-exact", [("hello world\n", "hello world\n"), ("  spaced  \n", "  spaced  \n"), ("", "")],
        checker={"mode": "exact"}, limits=LIM, meta="cat, byte for byte")
sub("echo-exact", "bash", "cat\n", "pass")
sub("echo-exact", "python", "import sys\nsys.stdout.write(sys.stdin.read().rstrip() + '\\n')\n", "partial", note="trims: exact differs")

problem("hello", [("", "Hello, World!\n")], checker={"mode": "exact"}, limits=LIM, meta="exact greeting")
sub("hello", "c", '#include <stdio.h>\nint main(void){puts("Hello, World!");return 0;}\n', "pass")
sub("hello", "nodejs", "console.log('hello, world!')\n", "fail")

problem("shout", [("abc\n", "ABC\n"), ("MiXeD case\n", "MIXED CASE\n")],
        checker={"mode": "lines", "case_insensitive": True}, limits=LIM, meta="lines, case-insensitive")
sub("shout", "python", "print(input())\n", "pass", note="case-insensitive accepts the input as is")

problem("reverse-words", [("a b c\n", "c b a\n"), ("one\n", "one\n"), ("x  y\n", "y x\n")],
        checker={"mode": "tokens"}, limits=LIM, meta="tokens")
sub("reverse-words", "python", "print('\\n'.join(reversed(input().split())))\n", "pass", note="tokens: any whitespace")
sub("reverse-words", "bash", "read -a w\nfor ((i=${#w[@]}-1;i>=0;i--)); do printf '%s ' \"${w[i]}\"; done\necho\n", "pass")

problem("colour-name", [("1\n", "Red\n"), ("2\n", "GREEN\n")],
        checker={"mode": "tokens", "case_insensitive": True}, limits=LIM, meta="tokens, case-insensitive")
sub("colour-name", "python", "print(['red', 'green'][int(input()) - 1])\n", "pass")

t = []
for n in (5, 10, 1000):
    xs = [R.int(-10 ** 6, 10 ** 6) for _ in range(n)]
    t.append(("%d\n%s\n" % (n, " ".join(map(str, xs))), " ".join(map(str, sorted(xs))) + "\n"))
problem("sort-numbers", t, checker={"mode": "tokens"}, limits=LIM, meta="sort, tokens")
sub("sort-numbers", "cpp", "#include <bits/stdc++.h>\nint main(){int n;std::cin>>n;std::vector<long>v(n);for(auto&x:v)std::cin>>x;std::sort(v.begin(),v.end());for(auto x:v)std::cout<<x<<' ';std::cout<<'\\n';}\n", "pass")
sub("sort-numbers", "python", "input()\nprint(*input().split())\n", "fail", note="unsorted")

t = []
for n in (1, 2, 10, 50, 90):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    t.append(("%d\n" % n, "%d\n" % a))
problem("fib", t, limits=LIM, meta="Fibonacci, big integers")
sub("fib", "python", "n=int(input())\na,b=0,1\nfor _ in range(n): a,b=b,a+b\nprint(a)\n", "pass")
sub("fib", "c", '#include <stdio.h>\nint main(void){int n;scanf("%d",&n);int a=0,b=1;for(int i=0;i<n;i++){int c=a+b;a=b;b=c;}printf("%d\\n",a);return 0;}\n', "partial", note="int overflow on big n")

t = []
for _ in range(3):
    a, b = R.int(1, 10 ** 9), R.int(1, 10 ** 9)
    t.append(("%d %d\n" % (a, b), "%d\n" % math.gcd(a, b)))
problem("gcd", t, limits=LIM)
sub("gcd", "nodejs", "const [a,b]=require('fs').readFileSync(0,'utf8').trim().split(' ').map(Number);const g=(x,y)=>y?g(y,x%y):x;console.log(g(a,b));\n", "pass")

problem("reverse-string", [("abc\n", "cba\n"), ("racecar\n", "racecar\n"), ("\xe9t\xe9\n", "\xe9t\xe9\n")],
        checker={"mode": "exact"}, limits=LIM, meta="exact, UTF-8")
sub("reverse-string", "python", "import sys\nsys.stdout.write(input()[::-1] + '\\n')\n", "pass")

t = []
for n in (1, 3, 4):
    m = [[R.int(-9, 9) for _ in range(n)] for _ in range(n)]
    t.append(("%d\n%s" % (n, "".join(" ".join(map(str, row)) + "\n" for row in m)), "%d\n" % sum(m[i][i] for i in range(n))))
problem("matrix-trace", t, checker={"mode": "tokens"}, limits=LIM, meta="tokens, C")
sub("matrix-trace", "c", '#include <stdio.h>\nint main(void){int n;scanf("%d",&n);long s=0;for(int i=0;i<n;i++)for(int j=0;j<n;j++){long x;scanf("%ld",&x);if(i==j)s+=x;}printf("%ld\\n",s);return 0;}\n', "pass")

t = [("%d %d %d\n" % abc, "YES\n" if sorted(abc)[0] + sorted(abc)[1] > sorted(abc)[2] else "NO\n") for abc in ((3, 4, 5), (1, 2, 3), (5, 5, 5), (1, 1, 10))]
problem("triangle", t, checker={"mode": "yesno"}, limits=LIM, meta="yesno, Node")
sub("triangle", "nodejs", "const v=require('fs').readFileSync(0,'utf8').trim().split(/\\s+/).map(Number).sort((a,b)=>a-b);console.log(v[0]+v[1]>v[2]?'yes':'no');\n", "pass")
sub("triangle", "nodejs", "const v=require('fs').readFileSync(0,'utf8').trim().split(/\\s+/).map(Number).sort((a,b)=>a-b);console.log(v[0]+v[1]>=v[2]?'yes':'no');\n", "partial", note="degenerate triangles")

t = [("one two three\n", "3\n3\n5\n"), ("a\n", "1\n")]
problem("word-lengths", t, limits=LIM, meta="lines, bash; trailing spaces are fine")
sub("word-lengths", "bash", "for w in $(cat); do echo \"${#w}  \"; done\n", "pass", note="trailing spaces on each line")

# ---- numeric ------------------------------------------------------------------------------------

t = []
for r in (1, 2.5, 1000, 0):
    t.append(("%s\n" % r, "%.9f\n" % (math.pi * r * r)))
problem("circle-area", t, checker={"mode": "numeric", "tolerance": "abs_or_rel", "abs_tol": 1e-6, "rel_tol": 1e-6},
        limits=LIM, meta="numeric, abs or rel 1e-6")
sub("circle-area", "python", "import math\nr=float(input())\nprint(math.pi*r*r)\n", "pass")
sub("circle-area", "python", "r=float(input())\nprint(3.14*r*r)\n", "partial", note="pi too rough, except r=0")
sub("circle-area", "c", '#include <stdio.h>\n#include <math.h>\nint main(void){double r;scanf("%lf",&r);printf("%.3e\\n",M_PI*r*r);return 0;}\n', "partial", note="3 digits are not enough for big areas")

t = [("%d\n" % x, "%.15g\n" % math.sqrt(x)) for x in (2, 10 ** 12, 3)]
problem("sqrt-rel", t, checker={"mode": "numeric", "tolerance": "rel", "rel_tol": 1e-9}, limits=LIM,
        meta="numeric, relative 1e-9")
sub("sqrt-rel", "cpp", "#include <cstdio>\n#include <cmath>\nint main(){double x;scanf(\"%lf\",&x);printf(\"%.12e\\n\",sqrt(x));}\n", "pass")

t = []
for n in (3, 4):
    xs = [R.int(0, 100) for _ in range(n)]
    t.append(("%s\n" % " ".join(map(str, xs)), "%.6f\n" % (sum(xs) / n)))
problem("mean-abs", t, checker={"mode": "numeric", "tolerance": "abs", "abs_tol": 1e-3}, limits=LIM,
        meta="numeric, absolute 1e-3")
sub("mean-abs", "python", "x=list(map(int,input().split()))\nprint(round(sum(x)/len(x),4))\n", "pass")
sub("mean-abs", "python", "x=list(map(int,input().split()))\nprint(round(sum(x)/len(x)))\n", "fail", note="rounded to an integer")

problem("big-product", [("123456789 987654321\n", "121932631112635269\n"), ("4294967296 4294967297\n", "18446744078004518912\n")],
        checker={"mode": "numeric"}, limits=LIM, meta="numeric: integers exact")
sub("big-product", "python", "a,b=map(int,input().split())\nprint(a*b)\n", "pass")
sub("big-product", "python", "a,b=map(int,input().split())\nprint(int(float(a)*float(b)))\n", "partial", note="doubles lose the last digits")

# ---- yesno, unordered_lines, multiset_tokens ----------------------------------------------------


def isprime(n):
    return n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))


t = [("%d\n" % n, "YES\n" if isprime(n) else "NO\n") for n in (2, 15, 97, 1, 7919)]
problem("is-prime", t, checker={"mode": "yesno"}, limits=LIM, meta="yesno")
sub("is-prime", "python", "n=int(input())\nprint('yes' if n>1 and all(n%d for d in range(2,int(n**.5)+1)) else 'no')\n", "pass")
sub("is-prime", "bash", "read n\necho yes\n", "partial", note="always yes")

t = [(s + "\n", "YES\n" if s == s[::-1] else "NO\n") for s in ("abba", "abc", "x")]
problem("palindrome", t, checker={"mode": "yesno"}, limits=LIM)
sub("palindrome", "cpp", "#include <bits/stdc++.h>\nint main(){std::string s;std::cin>>s;std::string r(s.rbegin(),s.rend());std::cout<<(s==r?\"Yes\":\"No\")<<'\\n';}\n", "pass")

t = []
for n in (12, 97, 360):
    t.append(("%d\n" % n, "".join("%d\n" % d for d in range(1, n + 1) if n % d == 0)))
problem("divisors", t, checker={"mode": "unordered_lines"}, limits=LIM, meta="unordered_lines")
sub("divisors", "python", "n=int(input())\nfor d in range(n,0,-1):\n    if n%d==0: print(d)\n", "pass", note="any order")
sub("divisors", "python", "n=int(input())\nfor d in range(2,n+1):\n    if n%d==0: print(d)\n", "fail", note="misses 1")


def factor(n):
    f, d = [], 2
    while d * d <= n:
        while n % d == 0:
            f.append(d)
            n //= d
        d += 1
    if n > 1:
        f.append(n)
    return f


t = [("%d\n" % n, " ".join(map(str, factor(n))) + "\n") for n in (12, 97, 1024, 999999)]
problem("factorize", t, checker={"mode": "multiset_tokens"}, limits=LIM, meta="multiset_tokens")
sub("factorize", "c", '#include <stdio.h>\nint main(void){long n;scanf("%ld",&n);long m=n;for(long d=2;d*d<=m;d++)while(m%d==0){printf("%ld\\n",d);m/=d;}if(m>1)printf("%ld\\n",m);return 0;}\n', "pass")
sub("factorize", "python", "n=int(input())\nd=2\nout=set()\nwhile d*d<=n:\n    while n%d==0: out.add(d); n//=d\n    d+=1\nif n>1: out.add(n)\nprint(*out)\n", "partial", note="a set loses repeated factors")

# ---- weighted tests, many tests -----------------------------------------------------------------

t = []
for n in (5, 8, 2000):
    xs = [R.int(-100, 100) for _ in range(n)]
    best = cur = xs[0]
    for x in xs[1:]:
        cur = max(x, cur + x)
        best = max(best, cur)
    t.append(("%d\n%s\n" % (n, " ".join(map(str, xs))), "%d\n" % best))
problem("max-subarray", t, limits=LIM, extra={"weights": {"003": 2}}, meta="lines, the big test weighs 2")
sub("max-subarray", "python", "input()\nx=list(map(int,input().split()))\nb=c=x[0]\nfor v in x[1:]:\n    c=max(v,c+v); b=max(b,c)\nprint(b)\n", "pass")
sub("max-subarray", "python", "input()\nx=list(map(int,input().split()))\nprint(max(max(sum(x[i:j]) for j in range(i+1,len(x)+1)) for i in range(len(x))) if len(x)<100 else 0)\n", "partial", note="brute force, gives up on the big test")
sub("max-subarray", "python", "input()\nx=list(map(int,input().split()))\nprint(max(sum(x[i:j]) for i in range(len(x)) for j in range(i+1,len(x)+1)))\n", "partial", "exec_timeout", note="slow: cubic on the big test")

t = [("%d\n" % i, "%d\n" % (i * i)) for i in range(1, 21)]
problem("square20", t, limits={"time": 1, "memory": "64M", "output": "1K"}, meta="20 tests (the benchmark's)")
sub("square20", "cpp", "#include <iostream>\nint main(){long x;std::cin>>x;std::cout<<x*x<<'\\n';}\n", "pass")
sub("square20", "python", "x=int(input())\nprint(x*x if x<=10 else x)\n", "partial")

# ---- resources and crashes ----------------------------------------------------------------------

problem("count-lines", [("a\nb\nc\n", "3\n"), ("", "0\n"), ("x\n" * 100, "100\n")], limits=LIM, meta="resources")
sub("count-lines", "python", "import sys\nprint(len(sys.stdin.readlines()))\n", "pass")
sub("count-lines", "python", "while True:\n    pass\n", "fail", "exec_timeout", note="slow: never ends")
sub("count-lines", "python", "x = bytearray(512 << 20)\nprint(len(x))\n", "fail", "oom", note="memory-hungry")
sub("count-lines", "c", "int main(void){ volatile int *p = 0; return *p; }\n", "fail", note="crashes (SG)")
sub("count-lines", "python", "import sys\nprint(len(sys.stdin.readlines()))\nsys.exit(3)\n", "fail", note="right output, non-zero exit (RE)")
sub("count-lines", "python", "import sys\nwhile True:\n    sys.stdout.write('y' * 65536)\n", "fail", "output_limit", note="hack: output flood")
sub("count-lines", "python", "import os\nfor p in ('/work/answer', '/work/tests/001.ans', '/problems/count-lines/tests/001.ans', '/answer'):\n    try:\n        print(open(p).read().strip()); break\n    except OSError:\n        pass\nelse:\n    print('no answer file')\n", "fail", note="hack: reads an answer file (there is none)")
sub("count-lines", "python", "import sys\ntry:\n    open('/bin/bash', 'w').write('#!/bin/sh\\necho All tests passed\\n')\nexcept OSError:\n    pass\nprint(len(sys.stdin.readlines()))\n", "pass", "policy_violation", note="hack: overwrites /bin/bash (its own sandbox's copy): the audit (on by default) fails its process level as tamper")
sub("count-lines", "python", "import socket, sys\ntry:\n    socket.create_connection(('198.51.100.7', 80), timeout=1).sendall(b'GET /answers HTTP/1.0\\r\\n\\r\\n')\nexcept OSError:\n    pass\nprint(len(sys.stdin.readlines()))\n", "pass", "policy_violation", note="hack: fetches the answers over the network: the audit (on by default) fails its process level as egress")

# ---- call-based (in_outs with fn_name) ----------------------------------------------------------


def inouts(pid, fn, cases, meta):
    pj = {"id": pid, "version": "1", "title": meta, "limits": LIM,
          "in_outs": {"inputs": [c[0] for c in cases], "outputs": [c[1] for c in cases], "fn_name": fn}}
    problems[pid] = (pj, None, {})


inouts("two-sum", "twoSum", [[[[2, 7, 11, 15], 9], [0, 1]], [[[3, 2, 4], 6], [1, 2]], ["[3,3]\n6", "[0, 1]"]],
       "call-based, Solution().twoSum (LeetCode style; a LiveCodeBench-style input)")
sub("two-sum", "python", "class Solution:\n    def twoSum(self, nums, target):\n        seen = {}\n        for i, x in enumerate(nums):\n            if target - x in seen:\n                return [seen[target - x], i]\n            seen[x] = i\n", "pass")
sub("two-sum", "python", "class Solution:\n    def twoSum(self, nums, target):\n        return (0, 1)\n", "partial", note="a tuple is a list; right once")
sub("two-sum", "python", "import builtins, json, os\njson.dumps = lambda *a, **k: '[0, 1]'\nos.write = lambda fd, b: len(b)\nbuiltins.print = lambda *a, **k: None\nclass Solution:\n    def twoSum(self, nums, target):\n        return None\n", "fail", note="hack: monkey-patches json.dumps and print")

sub("two-sum", "nodejs", "function twoSum(nums, target) {\n  const seen = new Map();\n  for (let i = 0; i < nums.length; i++) {\n    if (seen.has(target - nums[i])) return [seen.get(target - nums[i]), i];\n    seen.set(nums[i], i);\n  }\n}\n", "pass", note="call-based node")
sub("two-sum", "cpp", "#include <unordered_map>\n#include <vector>\nusing namespace std;\nclass Solution {\npublic:\n    vector<int> twoSum(vector<int>& nums, int target) {\n        unordered_map<int, int> seen;\n        for (int i = 0; i < (int)nums.size(); i++) {\n            if (seen.count(target - nums[i])) return {seen[target - nums[i]], i};\n            seen[nums[i]] = i;\n        }\n        return {};\n    }\n};\n", "pass", note="call-based C++ (LeetCode style)")
sub("two-sum", "nodejs", "JSON.stringify = () => '[0, 1]';\nprocess.stdout.write('[0, 1]\\n');\nfunction twoSum(nums, target) { return null; }\n", "fail", note="hack: patches JSON.stringify, prints the answer")
inouts("reverse-list", "reverse", [[[[1, 2, 3]], [3, 2, 1]], [[[]], []], [[["a", "b"]], ["b", "a"]]],
       "call-based, a top-level function")
sub("reverse-list", "python", "def reverse(xs):\n    print('debugging', xs)\n    return xs[::-1]\n", "pass", note="its prints do not count")
sub("reverse-list", "python", "import sys\ndef reverse(xs):\n    sys.exit(0)\n", "fail", note="hack: sys.exit(0) before returning")

inouts("word-count", "count", [[["a b a"], {"a": 2, "b": 1}], [[""], {}]], "call-based, a dict: key order ignored")
sub("word-count", "python", "from collections import Counter\ndef count(s):\n    return dict(sorted(Counter(s.split()).items(), reverse=True))\n", "pass")

problem("stdin-in-outs", None, extra={"in_outs": {"inputs": ["1\n", "2\n", "3\n"], "outputs": ["2\n", "4\n", "6\n"]}},
        limits=LIM, meta="in_outs without fn_name: stdin-style")
sub("stdin-in-outs", "bash", "read x\necho $((x * 2))\n", "pass")

# ---- checker programs ---------------------------------------------------------------------------

perm_checker = r'''#include <cstdio>
#include <vector>
// testlib convention: checker input output answer; 0 OK, 1 WA, 2 PE, 3 fail.
int main(int argc, char **argv) {
	if (argc < 4) return 3;
	FILE *in = fopen(argv[1], "r"), *out = fopen(argv[2], "r");
	if (!in || !out) return 3;
	int n;
	if (fscanf(in, "%d", &n) != 1) return 3;
	std::vector<int> seen(n + 1, 0);
	for (int i = 0; i < n; i++) {
		int x;
		if (fscanf(out, "%d", &x) != 1) { fprintf(stderr, "too few numbers\n"); return 2; }
		if (x < 1 || x > n || seen[x]++) { fprintf(stderr, "not a permutation at %d\n", i + 1); return 1; }
		if (i % 2 == 0 && x % 2 == 0 && n > 1) { fprintf(stderr, "position %d must be odd\n", i + 1); return 1; }
	}
	int extra;
	if (fscanf(out, "%d", &extra) == 1) { fprintf(stderr, "extra output\n"); return 1; }
	fprintf(stderr, "ok permutation of %d\n", n);
	return 0;
}
'''
problem("odd-first", [("1\n", "1\n"), ("3\n", "1 2 3\n"), ("5\n", "1 2 3 4 5\n")],
        checker={"mode": "checker", "source": "checker.cpp"}, limits=LIM, files={"checker.cpp": perm_checker},
        meta="special checker (C++, testlib): any permutation with odd numbers at odd positions")
sub("odd-first", "python", "n=int(input())\nprint(*range(1,n+1))\n", "pass")
sub("odd-first", "python", "n=int(input())\nprint(*sorted(range(1, n + 1), key=lambda x: x % 2))\n", "partial", note="evens first: right for n=1 only")

split_validator = r'''import sys
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
'''
problem("split-sum", [("10\n", "1 9\n"), ("2\n", "1 1\n"), ("99\n", "49 50\n")],
        checker={"mode": "checker", "source": "validator.py", "convention": "kattis"}, limits=LIM,
        files={"validator.py": split_validator}, meta="special checker (Python, Kattis): any split of n")
sub("split-sum", "nodejs", "const n=+require('fs').readFileSync(0,'utf8');console.log(1, n-1);\n", "pass")
sub("split-sum", "python", "n=int(input())\nprint(0, n)\n", "fail", note="zero is not positive")

partial_checker = r'''import sys
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
'''
problem("squares-partial", [("4\n", "1 4 9 16\n"), ("2\n", "1 4\n")],
        checker={"mode": "checker", "source": "checker.py"}, limits=LIM, files={"checker.py": partial_checker},
        meta="special checker with partial scores (testlib exit 7)")
sub("squares-partial", "python", "n=int(input())\nprint(*[i*i for i in range(1,n+1)])\n", "pass")
sub("squares-partial", "python", "n=int(input())\nprint(*[i*i if i<3 else 0 for i in range(1,n+1)])\n", "partial", note="half right on test 1")

# ---- interactive --------------------------------------------------------------------------------

guess_interactor = r'''import sys
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
'''
problem("guess-number", [("37\n", ""), ("1\n", ""), ("1000\n", "")], limits=LIM,
        extra={"interactor": {"source": "interactor.py"}}, files={"interactor.py": guess_interactor},
        meta="interactive: guess 1..1000 in 12 questions")
sub("guess-number", "python", "import sys\nlo,hi=1,1000\nwhile True:\n    m=(lo+hi)//2\n    print(m,flush=True)\n    r=sys.stdin.readline().strip()\n    if r=='=': break\n    if r=='<': hi=m-1\n    else: lo=m+1\n", "pass")
sub("guess-number", "cpp", "#include <bits/stdc++.h>\nint main(){int lo=1,hi=1000;for(;;){int m=(lo+hi)/2;std::cout<<m<<std::endl;std::string r;if(!(std::cin>>r))return 0;if(r==\"=\")return 0;if(r==\"<\")hi=m-1;else lo=m+1;}}\n", "pass")
sub("guess-number", "python", "import sys\nfor g in range(1, 1001):\n    print(g, flush=True)\n    if sys.stdin.readline().strip() == '=':\n        break\n", "partial", note="linear search: finds 1 only")

# ---- write --------------------------------------------------------------------------------------

assert len(problems) >= 30, len(problems)
shutil.rmtree(OUT, ignore_errors=True)
for pid, (pj, tests, files) in sorted(problems.items()):
    d = os.path.join(OUT, pid)
    os.makedirs(d)
    with open(os.path.join(d, "problem.json"), "w") as f:
        json.dump(pj, f, indent=1, ensure_ascii=False)
        f.write("\n")
    for name, text in files.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    if tests:
        os.makedirs(os.path.join(d, "tests"))
        for i, (inp, ans) in enumerate(tests, 1):
            with open(os.path.join(d, "tests", "%03d.in" % i), "w") as f:
                f.write(inp)
            with open(os.path.join(d, "tests", "%03d.ans" % i), "w") as f:
                f.write(ans)
# ---- a GRPO group's identical completions (last, so their originals are judged first): the
# fingerprint cache answers them, and `make run` shows what it cached -------------------------------
for orig in ("sum-3", "hello-1", "sort-numbers-2"):
    s = next(x for x in subs if x["sample_id"] == orig)
    sub(s["problem_id"], s["language"], s["code"], s["expect"]["output"], s["expect"]["failure_class"],
        note="duplicate of %s: the cache answers" % orig, group=s["group_id"])
with open(os.path.join(HERE, "submissions.jsonl"), "w") as f:
    for s in subs:
        f.write(json.dumps(s, ensure_ascii=False) + "\n")
print("%d problems in %s, %d submissions in examples/submissions.jsonl" % (len(problems), OUT, len(subs)))
