#!/usr/bin/env python3
"""Generates examples/requests.jsonl, the bundled requests for `paddock run`, and checks results.

    examples/make-requests.py                  writes examples/requests.jsonl (deterministic)
    examples/make-requests.py -o -             writes the requests to stdout
    examples/make-requests.py --check OUT.jsonl
                                               compares the results of
                                               `paddock run examples/requests.jsonl -o OUT.jsonl`
                                               with what each request's category should give

Python, bash, C, C++ and node programs, about a third in SandboxFusion's /run_code schema (marked
with "schema": "run_code"), the rest native: correct programs with stdin (sums, sorting, Fibonacci,
string reversal, prime counting), wrong answers, crashes, timeouts, memory hogs, fork bombs, output
floods, compile errors, file I/O with files and fetch_files, and escape attempts that must fail
inside the sandbox (except writes to /usr/bin, which land in the sandbox's own throwaway layer:
--check makes sure the host has no such file). Every request is short: a wall limit of at most 3 s (1 s for the timeouts, 2 s
for hogs, floods and fork bombs), and most finish in well under half a second. The task_id names the
category: <language>-<category>-<n>; --check uses it to know what each result should show.

Standard library only; no randomness but a fixed linear congruential generator, so the output is
the same on every run and every Python 3 version.
"""

import argparse
import base64
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# ---- deterministic data -------------------------------------------------------------------------


class Lcg:
    """Numerical Recipes LCG: the same numbers everywhere."""

    def __init__(self, seed):
        self.x = seed & 0xFFFFFFFF

    def next(self):
        self.x = (1664525 * self.x + 1013904223) & 0xFFFFFFFF
        return self.x

    def between(self, lo, hi):
        return lo + self.next() % (hi - lo + 1)


def numbers_input(rng, n, lo=-1000, hi=1000):
    xs = [rng.between(lo, hi) for _ in range(n)]
    return xs, "%d\n%s\n" % (n, " ".join(map(str, xs)))


def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def count_primes(n):
    if n < 2:
        return 0
    sieve = bytearray([1]) * (n + 1)
    sieve[0] = sieve[1] = 0
    i = 2
    while i * i <= n:
        if sieve[i]:
            sieve[i * i :: i] = bytearray(len(range(i * i, n + 1, i)))
        i += 1
    return sum(sieve)


PHRASES = [
    "hello world",
    "paddock runs untrusted code",
    "racecar",
    "A man a plan a canal Panama",
    "sandboxes are used once",
    "the quick brown fox jumps over the lazy dog",
    "12345 67890",
    "stressed",
]

# ---- programs: correct solutions ----------------------------------------------------------------

SOLUTIONS = {
    "python": {
        "gcd": "import math\na, b = map(int, input().split())\nprint(math.gcd(a, b))\n",
        "wc": "import sys\nt = sys.stdin.read()\nprint(t.count('\\n'), len(t.split()))\n",
        "sum": "import sys\nd = sys.stdin.read().split()\nn = int(d[0])\nprint(sum(map(int, d[1:1 + n])))\n",
        "sort": "import sys\nd = sys.stdin.read().split()\nn = int(d[0])\n"
        "print(' '.join(map(str, sorted(map(int, d[1:1 + n])))))\n",
        "fib": "n = int(input())\na, b = 0, 1\nfor _ in range(n):\n    a, b = b, a + b\nprint(a)\n",
        "reverse": "print(input()[::-1])\n",
        "primes": "n = int(input())\ns = bytearray([1]) * (n + 1)\ns[0] = s[1] = 0\ni = 2\n"
        "while i * i <= n:\n    if s[i]:\n        s[i*i::i] = bytearray(len(range(i*i, n + 1, i)))\n"
        "    i += 1\nprint(sum(s))\n",
    },
    "bash": {
        "gcd": "read a b\nwhile ((b)); do t=$((a % b)); a=$b; b=$t; done\necho $a\n",
        "wc": "l=0 w=0\nwhile IFS= read -r line; do l=$((l + 1)); set -- $line; w=$((w + $#)); done\necho $l $w\n",
        "sum": "read n\nread -a a\ns=0\nfor x in \"${a[@]}\"; do s=$((s + x)); done\necho $s\n",
        "sort": "read n\nread -a a\necho $(printf '%s\\n' \"${a[@]}\" | sort -n)\n",
        "fib": "read n\na=0 b=1\nfor ((i = 0; i < n; i++)); do t=$((a + b)); a=$b; b=$t; done\necho $a\n",
        "reverse": "IFS= read -r line\nr=\nfor ((i = ${#line} - 1; i >= 0; i--)); do r+=${line:i:1}; done\n"
        "echo \"$r\"\n",
        "primes": "read n\nc=0\ndeclare -a comp\nfor ((i = 2; i <= n; i++)); do\n"
        "  if [[ -z ${comp[i]} ]]; then c=$((c + 1)); for ((j = i * i; j <= n; j += i)); do comp[j]=1; done; fi\n"
        "done\necho $c\n",
    },
    "c": {
        "gcd": "#include <stdio.h>\nint main(void) {\n  long long a, b, t;\n  if (scanf(\"%lld %lld\", &a, &b) != 2) return 2;\n"
        "  while (b) { t = a % b; a = b; b = t; }\n  printf(\"%lld\\n\", a);\n  return 0;\n}\n",
        "wc": "#include <ctype.h>\n#include <stdio.h>\nint main(void) {\n  int c, in = 0;\n  long l = 0, w = 0;\n"
        "  while ((c = getchar()) != EOF) {\n    if (c == '\\n') l++;\n    if (isspace(c)) in = 0;\n    else if (!in) { in = 1; w++; }\n  }\n"
        "  printf(\"%ld %ld\\n\", l, w);\n  return 0;\n}\n",
        "sum": "#include <stdio.h>\nint main(void) {\n  int n; long long s = 0, x;\n  if (scanf(\"%d\", &n) != 1) return 2;\n"
        "  for (int i = 0; i < n; i++) { scanf(\"%lld\", &x); s += x; }\n  printf(\"%lld\\n\", s);\n  return 0;\n}\n",
        "sort": "#include <stdio.h>\n#include <stdlib.h>\n"
        "static int cmp(const void *a, const void *b) { long x = *(const long *)a, y = *(const long *)b; return (x > y) - (x < y); }\n"
        "int main(void) {\n  int n; if (scanf(\"%d\", &n) != 1) return 2;\n  long *v = malloc(sizeof *v * (n ? n : 1));\n"
        "  for (int i = 0; i < n; i++) scanf(\"%ld\", &v[i]);\n  qsort(v, n, sizeof *v, cmp);\n"
        "  for (int i = 0; i < n; i++) printf(i ? \" %ld\" : \"%ld\", v[i]);\n  printf(\"\\n\");\n  return 0;\n}\n",
        "fib": "#include <stdio.h>\nint main(void) {\n  int n; unsigned long long a = 0, b = 1, t;\n  if (scanf(\"%d\", &n) != 1) return 2;\n"
        "  for (int i = 0; i < n; i++) { t = a + b; a = b; b = t; }\n  printf(\"%llu\\n\", a);\n  return 0;\n}\n",
        "reverse": "#include <stdio.h>\n#include <string.h>\nint main(void) {\n  char s[4096];\n  if (!fgets(s, sizeof s, stdin)) return 2;\n"
        "  size_t n = strcspn(s, \"\\n\");\n  for (size_t i = n; i > 0; i--) putchar(s[i - 1]);\n  putchar('\\n');\n  return 0;\n}\n",
        "primes": "#include <stdio.h>\n#include <stdlib.h>\nint main(void) {\n  int n, c = 0; if (scanf(\"%d\", &n) != 1) return 2;\n"
        "  char *comp = calloc(n + 2, 1);\n  for (long i = 2; i <= n; i++)\n    if (!comp[i]) { c++; for (long j = i * i; j <= n; j += i) comp[j] = 1; }\n"
        "  printf(\"%d\\n\", c);\n  return 0;\n}\n",
    },
    "cpp": {
        "gcd": "#include <cstdio>\n#include <numeric>\nint main() {\n  long long a, b;\n  if (std::scanf(\"%lld %lld\", &a, &b) != 2) return 2;\n"
        "  std::printf(\"%lld\\n\", std::gcd(a, b));\n}\n",
        "wc": "#include <iostream>\n#include <sstream>\n#include <string>\nint main() {\n  std::string line, word;\n  long l = 0, w = 0;\n"
        "  while (std::getline(std::cin, line)) {\n    l++;\n    std::istringstream in(line);\n    while (in >> word) w++;\n  }\n"
        "  std::cout << l << ' ' << w << '\\n';\n}\n",
        "sum": "#include <iostream>\nint main() {\n  int n; long long s = 0, x;\n  std::cin >> n;\n"
        "  for (int i = 0; i < n; i++) { std::cin >> x; s += x; }\n  std::cout << s << \"\\n\";\n}\n",
        "sort": "#include <algorithm>\n#include <iostream>\n#include <vector>\nint main() {\n  int n; std::cin >> n;\n"
        "  std::vector<long> v(n);\n  for (auto &x : v) std::cin >> x;\n  std::sort(v.begin(), v.end());\n"
        "  for (size_t i = 0; i < v.size(); i++) std::cout << (i ? \" \" : \"\") << v[i];\n  std::cout << \"\\n\";\n}\n",
        "fib": "#include <cstdio>\nint main() {\n  int n; unsigned long long a = 0, b = 1;\n  if (std::scanf(\"%d\", &n) != 1) return 2;\n"
        "  while (n--) { unsigned long long t = a + b; a = b; b = t; }\n  std::printf(\"%llu\\n\", a);\n}\n",
        "reverse": "#include <algorithm>\n#include <iostream>\n#include <string>\nint main() {\n  std::string s;\n"
        "  std::getline(std::cin, s);\n  std::reverse(s.begin(), s.end());\n  std::cout << s << \"\\n\";\n}\n",
        "primes": "#include <cstdio>\n#include <vector>\nint main() {\n  int n, c = 0; if (std::scanf(\"%d\", &n) != 1) return 2;\n"
        "  std::vector<bool> comp(n + 2);\n  for (long i = 2; i <= n; i++)\n"
        "    if (!comp[i]) { c++; for (long j = i * i; j <= n; j += i) comp[j] = true; }\n  std::printf(\"%d\\n\", c);\n}\n",
    },
    "nodejs": {
        "gcd": "let [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\n"
        "while (b) [a, b] = [b, a % b];\nconsole.log(a);\n",
        "wc": "const t = require('fs').readFileSync(0, 'utf8');\n"
        "console.log(t.split('\\n').length - 1, t.split(/\\s+/).filter(Boolean).length);\n",
        "sum": "const d = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\n"
        "console.log(d.slice(1, 1 + d[0]).reduce((a, b) => a + b, 0));\n",
        "sort": "const d = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\n"
        "console.log(d.slice(1, 1 + d[0]).sort((a, b) => a - b).join(' '));\n",
        "fib": "const n = Number(require('fs').readFileSync(0, 'utf8'));\nlet a = 0n, b = 1n;\n"
        "for (let i = 0; i < n; i++) [a, b] = [b, a + b];\nconsole.log(a.toString());\n",
        "reverse": "const s = require('fs').readFileSync(0, 'utf8').split('\\n')[0];\n"
        "console.log([...s].reverse().join(''));\n",
        "primes": "const n = Number(require('fs').readFileSync(0, 'utf8'));\nconst comp = new Uint8Array(n + 2);\nlet c = 0;\n"
        "for (let i = 2; i <= n; i++) if (!comp[i]) { c++; for (let j = i * i; j <= n; j += i) comp[j] = 1; }\n"
        "console.log(c);\n",
    },
}

# Wrong answers: each prints a plausible but wrong result (status OK, output differs) ...
WRONG_OUTPUT = {
    "python": {
        "sum": "import sys\nd = sys.stdin.read().split()\nprint(sum(map(int, d[1:])) + 1)  # off by one\n",
        "sort": "import sys\nd = sys.stdin.read().split()\nprint(' '.join(map(str, sorted(map(int, d[1:]), reverse=True))))\n",
        "fib": "n = int(input())\na, b = 0, 1\nfor _ in range(n - 1):\n    a, b = b, a + b\nprint(a)\n",
        "reverse": "print(' '.join(reversed(input().split())))  # reverses words, not letters\n",
        "primes": "n = int(input())\nprint(sum(1 for k in range(1, n + 1) if all(k % d for d in range(2, int(k ** 0.5) + 1))))  # counts 1\n",
    },
    "bash": {
        "sum": "read n\nread -a a\necho $(( ${#a[@]} ))  # counts instead of adding\n",
        "sort": "read n\nread -a a\necho $(printf '%s\\n' \"${a[@]}\" | sort)  # sorts as text\n",
        "fib": "read n\necho $((n * n))\n",
        "reverse": "IFS= read -r line\necho \"$line\"\n",
        "primes": "read n\necho $((n / 10))\n",
    },
    "c": {
        "sum": "#include <stdio.h>\nint main(void) {\n  int n, s = 0, x;  /* skips the last number */\n  scanf(\"%d\", &n);\n"
        "  for (int i = 0; i < n - 1; i++) { scanf(\"%d\", &x); s += x; }\n  printf(\"%d\\n\", s);\n  return 0;\n}\n",
        "fib": "#include <stdio.h>\nint main(void) {\n  int n; unsigned a = 0, b = 1, t;  /* 32 bits overflow */\n  scanf(\"%d\", &n);\n"
        "  for (int i = 0; i < n; i++) { t = a + b; a = b; b = t; }\n  printf(\"%u\\n\", a);\n  return 0;\n}\n",
        "primes": "#include <stdio.h>\nint main(void) {\n  int n; scanf(\"%d\", &n);\n  printf(\"%d\\n\", n / 2);  /* a guess */\n  return 0;\n}\n",
        "sort": SOLUTIONS["c"]["sort"].replace("(x > y) - (x < y)", "(x < y) - (x > y)"),
        "reverse": SOLUTIONS["c"]["reverse"].replace("i > 0; i--", "i > 1; i--"),
    },
    "cpp": {
        "sum": "#include <iostream>\nint main() {\n  int n, x; short s = 0;  // overflows\n  std::cin >> n;\n"
        "  while (n--) { std::cin >> x; s += x * 100; }\n  std::cout << s / 100 << \"\\n\";\n}\n",
        "reverse": "#include <iostream>\n#include <string>\nint main() {\n  std::string s; std::getline(std::cin, s);\n"
        "  std::cout << s << \"\\n\";  // forgot to reverse\n}\n",
        "primes": "#include <cstdio>\nint main() {\n  int n, c = 0; std::scanf(\"%d\", &n);\n"
        "  for (int i = 1; i <= n; i += 2) c++;  // counts odd numbers\n  std::printf(\"%d\\n\", c);\n}\n",
        "sort": SOLUTIONS["cpp"]["sort"].replace("std::sort(v.begin(), v.end());", "std::sort(v.begin(), v.end());\n  v.pop_back();  // loses the largest"),
        "fib": "#include <iostream>\nint main() {\n  int n; double a = 0, b = 1;\n  std::cin >> n;\n"
        "  while (n--) { double t = a + b; a = b; b = t; }\n  std::cout << a << \"\\n\";  // prints 2.3e+17\n}\n",
    },
    "nodejs": {
        "sum": "const d = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/);\n"
        "console.log(d.slice(1).reduce((a, b) => a + b, ''));  // concatenates strings\n",
        "sort": "const d = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\n"
        "console.log(d.slice(1).sort().join(' '));  // default sort is lexicographic\n",
        "fib": "const n = Number(require('fs').readFileSync(0, 'utf8'));\nlet a = 0, b = 1;\n"
        "for (let i = 0; i < n; i++) [a, b] = [b, a + b];\nconsole.log(a);  // loses precision past 2^53\n",
        "reverse": "const s = require('fs').readFileSync(0, 'utf8').split('\\n')[0];\n"
        "console.log(s.split(' ').reverse().join(' '));  // reverses words\n",
        "primes": "const n = Number(require('fs').readFileSync(0, 'utf8'));\nlet c = 0;\n"
        "for (let i = 2; i * i <= n; i++) c++;  // stops at the square root\nconsole.log(c);\n",
    },
}

# ... or the right answer and then a non-zero exit (status RE, exit 1).
WRONG_EXIT = {
    "python": ("sum", "import sys\nd = sys.stdin.read().split()\nprint(sum(map(int, d[1:])))\nsys.exit(1)\n"),
    "bash": ("fib", SOLUTIONS["bash"]["fib"] + "exit 1\n"),
    "c": ("reverse", SOLUTIONS["c"]["reverse"].replace("return 0;\n}", "return 1;\n}")),
    "cpp": ("fib", SOLUTIONS["cpp"]["fib"].replace("a);\n}", "a);\n  return 1;\n}")),
    "nodejs": ("primes", SOLUTIONS["nodejs"]["primes"] + "process.exit(1);\n"),
}

CRASHES = {
    "python": [
        ("zero division", "print(1 // int(input()))\n", "0\n"),
        ("uncaught exception", "raise RuntimeError('unexpected state')\n", None),
        ("index error", "xs = [1, 2, 3]\nprint(xs[int(input())])\n", "7\n"),
        ("bad input", "print(int(input()) * 2)\n", "forty-two\n"),
        ("recursion", "def f(n):\n    return f(n + 1) + 1\nprint(f(0))\n", None),
    ],
    "bash": [
        ("division by zero", "read d\necho $((10 / d))\n", "0\n"),
        ("set -e", "set -e\necho start\nfalse\necho unreachable\n", None),
        ("command not found", "no-such-command --flag\n", None),
        ("kills itself", "echo before\nkill -SEGV $$\necho after\n", None),
    ],
    "c": [
        ("segfault", "#include <stdio.h>\nint main(void) {\n  int *p = NULL;\n  *p = 42;\n  printf(\"%d\\n\", *p);\n  return 0;\n}\n", None),
        ("division by zero", "#include <stdio.h>\nint main(void) {\n  int a, b;\n  scanf(\"%d %d\", &a, &b);\n"
         "  printf(\"%d\\n\", a / b);\n  return 0;\n}\n", "7 0\n"),
        ("abort", "#include <assert.h>\n#include <stdio.h>\nint main(void) {\n  int n = 0;\n  scanf(\"%d\", &n);\n"
         "  assert(n > 0);\n  return 0;\n}\n", "-1\n"),
        ("stack overflow", "#include <stdio.h>\nint depth(volatile int n) { volatile char pad[256]; pad[0] = (char)n; return depth(n + 1) + pad[0]; }\n"
         "int main(void) { printf(\"%d\\n\", depth(0)); return 0; }\n", None),
    ],
    "cpp": [
        ("segfault", "#include <cstdio>\nstruct Node { int v; Node *next; };\nint main() {\n  Node *n = nullptr;\n"
         "  std::printf(\"%d\\n\", n->next->v);\n}\n", None),
        ("uncaught exception", "#include <stdexcept>\nint main() {\n  throw std::runtime_error(\"unexpected state\");\n}\n", None),
        ("out of range", "#include <cstdio>\n#include <vector>\nint main() {\n  std::vector<int> v(3);\n  int i;\n"
         "  if (std::scanf(\"%d\", &i) != 1) return 2;\n  std::printf(\"%d\\n\", v.at(i));\n}\n", "10\n"),
        ("division by zero", "#include <cstdio>\nint main() {\n  long a, b;\n  if (std::scanf(\"%ld %ld\", &a, &b) != 2) return 2;\n"
         "  std::printf(\"%ld\\n\", a % b);\n}\n", "9 0\n"),
    ],
    "nodejs": [
        ("uncaught exception", "throw new Error('unexpected state');\n", None),
        ("type error", "const cfg = undefined;\nconsole.log(cfg.value);\n", None),
        ("bigint division by zero", "const d = BigInt(require('fs').readFileSync(0, 'utf8').trim());\nconsole.log(10n / d);\n", "0\n"),
        ("bad json", "console.log(JSON.parse(require('fs').readFileSync(0, 'utf8')).x);\n", "{not json\n"),
        ("stack overflow", "function f(n) { return f(n + 1) + 1; }\nconsole.log(f(0));\n", None),
    ],
}

TIMEOUTS = {
    "python": [
        ("busy loop", "while True:\n    pass\n"),
        ("sleeps", "import time\ntime.sleep(30)\nprint('woke')\n"),
        ("waits for stdin that never ends", "import sys\nn = 0\nwhile True:\n    n += len(sys.stdin.readline()) + 1\n"),
    ],
    "bash": [
        ("busy loop", "while :; do :; done\n"),
        ("sleeps", "sleep 30\necho woke\n"),
        ("background job waited for", "(while :; do :; done) &\nwait\n"),
    ],
    "c": [
        ("busy loop", "int main(void) {\n  volatile unsigned long i = 0;\n  for (;;) i++;\n}\n"),
        ("sleeps", "#include <unistd.h>\nint main(void) {\n  sleep(30);\n  return 0;\n}\n"),
    ],
    "cpp": [
        ("busy loop", "#include <atomic>\nint main() {\n  std::atomic<unsigned long> i{0};\n  for (;;) i++;\n}\n"),
        ("deadlock on itself", "#include <mutex>\nint main() {\n  std::timed_mutex m;\n  m.lock();\n"
         "  while (!m.try_lock_for(std::chrono::seconds(60))) {}\n}\n"),
    ],
    "nodejs": [
        ("busy loop", "while (true) {}\n"),
        ("timer far away", "setTimeout(() => console.log('late'), 30000);\n"),
        ("promise that never settles, busy", "new Promise(() => {});\nfor (;;) {}\n"),
    ],
}

MEMHOGS = {  # each tries to allocate (and touch) 500 MB under a 64 MB limit
    "python": [
        ("bytearray", "b = bytearray(500 * 1024 * 1024)\nprint(len(b))\n"),
        ("list growth", "xs = []\nwhile len(xs) < 500 * 1024 * 1024 // 8:\n    xs.append(len(xs))\nprint(len(xs))\n"),
    ],
    "bash": [
        ("string doubling", "s=0123456789abcdef\nwhile (( ${#s} < 500000000 )); do s=$s$s; done\necho ${#s}\n"),
    ],
    "c": [
        ("malloc and touch", "#include <stdio.h>\n#include <stdlib.h>\nint main(void) {\n  size_t n = 500u << 20;\n"
         "  volatile char *p = malloc(n);\n  if (!p) { puts(\"malloc failed\"); return 3; }\n"
         "  unsigned long sum = 0;\n  for (size_t i = 0; i < n; i += 4096) { p[i] = (char)i; sum += p[i]; }\n"
         "  printf(\"%lu\\n\", sum);\n  return 0;\n}\n"),
        ("calloc chunks", "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\nint main(void) {\n"
         "  size_t total = 0;\n  for (int i = 0; i < 500; i++) {\n    char *c = malloc(1 << 20);\n    if (!c) break;\n"
         "    memset(c, i, 1 << 20);\n    total += c[i];\n  }\n  printf(\"%zu\\n\", total);\n  return 0;\n}\n"),
    ],
    "cpp": [
        ("vector", "#include <cstdio>\n#include <vector>\nint main() {\n  std::vector<char> v(500u << 20, 1);\n"
         "  unsigned long s = 0;\n  for (size_t i = 0; i < v.size(); i += 4096) s += v[i];\n  std::printf(\"%lu\\n\", s);\n}\n"),
        ("strings", "#include <cstdio>\n#include <string>\n#include <vector>\nint main() {\n  std::vector<std::string> keep;\n"
         "  for (int i = 0; i < 500; i++) keep.emplace_back(1 << 20, char('a' + i % 26));\n"
         "  std::printf(\"%zu\\n\", keep.size());\n}\n"),
    ],
    "nodejs": [
        ("buffer", "const b = Buffer.alloc(500 * 1024 * 1024, 1);\nconsole.log(b.length);\n"),
        ("buffers kept", "const keep = [];\nfor (let i = 0; i < 500; i++) keep.push(Buffer.alloc(1 << 20, i));\n"
         "console.log(keep.length);\n"),
    ],
}

FLOODS = {  # output past the 64 MiB kill threshold (or past the 1 MiB kept, then exit 0)
    "python": [
        ("print loop", "while True:\n    print('flood ' * 200)\n"),
        ("stderr loop", "import sys\nline = 'e' * 4095 + '\\n'\nwhile True:\n    sys.stderr.write(line)\n"),
        ("3 MB then exit 0", "print('y' * 3000000)\n"),
    ],
    "bash": [
        ("yes", "yes\n"),
        ("seq", "seq 1 1000000000\n"),
    ],
    "c": [
        ("fwrite loop", "#include <stdio.h>\n#include <string.h>\nint main(void) {\n  char buf[65536];\n"
         "  memset(buf, 'c', sizeof buf);\n  for (;;) fwrite(buf, 1, sizeof buf, stdout);\n}\n"),
        ("2 MB then exit 0", "#include <stdio.h>\nint main(void) {\n  for (int i = 0; i < 200000; i++) puts(\"0123456789\");\n  return 0;\n}\n"),
    ],
    "cpp": [
        ("cout loop", "#include <iostream>\n#include <string>\nint main() {\n  std::string s(8192, 'p');\n"
         "  for (;;) std::cout << s << '\\n';\n}\n"),
    ],
    "nodejs": [
        ("writeSync loop", "const fs = require('fs');\nconst s = 'n'.repeat(65536);\nfor (;;) fs.writeSync(1, s);\n"),
        ("2 MB then exit 0", "process.stdout.write('z'.repeat(2 * 1024 * 1024) + '\\n');\n"),
    ],
}

FORK_BOMBS = [  # native only (pids_peak is in the native record); wall limit 2 s
    # the bare classic: the shell itself exits at once, so the exec may end (OK, few pids seen)
    # before the bomb grows; what is left is killed with the sandbox
    ("bash", "classic, shell exits at once", ":(){ :|:& };:\n"),
    ("bash", "classic, shell stays", ":(){ :|:& };:\nsleep 1\necho contained\n"),
    ("bash", "classic, then wait", ":(){ :|:& };:\nwait\necho contained\n"),
    ("bash", "subshells forever", "while :; do (sleep 5) & done\n"),
    ("c", "fork loop", "#include <unistd.h>\nint main(void) {\n  for (;;) fork();\n}\n"),
    ("cpp", "threads", "#include <thread>\n#include <vector>\n#include <chrono>\nint main() {\n  std::vector<std::thread> t;\n"
     "  for (;;) {\n    try { t.emplace_back([] { std::this_thread::sleep_for(std::chrono::seconds(30)); }); }\n"
     "    catch (...) { std::this_thread::sleep_for(std::chrono::milliseconds(10)); }\n  }\n}\n"),
    ("python", "os.fork loop", "import os, time\nfor _ in range(1000):\n    try:\n        if os.fork() == 0:\n"
     "            os.execv('/bin/sleep', ['sleep', '30'])\n    except OSError as e:\n        print('fork refused:', e.strerror)\n"
     "        break\ntime.sleep(30)\n"),
]

COMPILE_ERRORS = {
    "c": [
        ("missing semicolon", "#include <stdio.h>\nint main(void) {\n  printf(\"hi\\n\")\n  return 0;\n}\n"),
        ("undeclared identifier", "int main(void) {\n  return counter + 1;\n}\n"),
        ("unbalanced brace", "int main(void) {\n  if (1) {\n    return 0;\n}\n"),
        ("type error", "struct p { int x; };\nint main(void) {\n  struct p a = {1};\n  return a + 1;\n}\n"),
        ("link error", "int helper(int);\nint main(void) {\n  return helper(1);\n}\n"),
    ],
    "cpp": [
        ("missing semicolon", "#include <cstdio>\nint main() {\n  int x = 1\n  std::printf(\"%d\\n\", x);\n}\n"),
        ("undeclared identifier", "int main() {\n  return undefined_value;\n}\n"),
        ("type mismatch", "#include <string>\nint main() {\n  std::string s = 42.5;\n  return 0;\n}\n"),
        ("template error", "#include <map>\nint main() {\n  std::map<int, int> m;\n  m.push_back(1);\n}\n"),
        ("syntax", "int main( { return 0 }\n"),
    ],
}

# ---- escapes: each prints "blocked: ..." when the attempt failed inside, "ESCAPED" otherwise -----

ESCAPES = {
    "python": [
        ("read /etc/shadow", "try:\n    print('ESCAPED', open('/etc/shadow').read()[:40])\n"
         "except OSError as e:\n    print('blocked:', e.strerror)\n"),
        ("connect 1.1.1.1:80", "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 80), timeout=1)\n    print('ESCAPED')\n"
         "except OSError as e:\n    print('blocked:', e.strerror or e)\n"),
        ("chroot", "import os\ntry:\n    os.chroot('/tmp')\n    print('ESCAPED')\nexcept OSError as e:\n    print('blocked:', e.strerror)\n"),
        ("raw socket", "import socket\ntry:\n    socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n    print('ESCAPED')\n"
         "except OSError as e:\n    print('blocked:', e.strerror)\n"),
        ("write to /usr/bin", "p = '/usr/bin/paddock-escape-probe'\nopen(p, 'w').write('x')\n"
         "print('sandbox-layer: wrote', p, '(the host must not have it)')\n"),
    ],
    "bash": [
        ("read /etc/shadow", "if out=$(cat /etc/shadow 2>&1); then echo ESCAPED; else echo \"blocked: $out\"; fi\n"),
        ("connect 1.1.1.1:80", "if (exec 3<>/dev/tcp/1.1.1.1/80) 2>/dev/null; then echo ESCAPED; else echo 'blocked: no route'; fi\n"),
        ("host home directories", "found=$(find /root /home -type f 2>/dev/null | head -5)\n"
         "if [ -n \"$found\" ]; then echo ESCAPED; echo \"$found\"; else echo 'blocked: no files in /home or /root'; fi\n"),
        ("mount", "if out=$(mount -t tmpfs none /mnt 2>&1); then echo ESCAPED; else echo \"blocked: $out\"; fi\n"),
        ("unshare", "if out=$(unshare -U true 2>&1); then echo ESCAPED; else echo \"blocked: $out\"; fi\n"),
        ("write to /usr/bin", "echo x > /usr/bin/paddock-escape-probe && echo 'sandbox-layer: wrote /usr/bin/paddock-escape-probe'\n"),
    ],
    "c": [
        ("connect 1.1.1.1:80", "#include <arpa/inet.h>\n#include <errno.h>\n#include <stdio.h>\n#include <string.h>\n#include <sys/socket.h>\n"
         "int main(void) {\n  int fd = socket(AF_INET, SOCK_STREAM, 0);\n  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(80)};\n"
         "  inet_pton(AF_INET, \"1.1.1.1\", &a.sin_addr);\n  if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) { puts(\"ESCAPED\"); return 0; }\n"
         "  printf(\"blocked: %s\\n\", strerror(errno));\n  return 0;\n}\n"),
        ("read /etc/shadow", "#include <errno.h>\n#include <stdio.h>\n#include <string.h>\nint main(void) {\n"
         "  FILE *f = fopen(\"/etc/shadow\", \"r\");\n  if (f) { puts(\"ESCAPED\"); return 0; }\n"
         "  printf(\"blocked: %s\\n\", strerror(errno));\n  return 0;\n}\n"),
        ("raw disk", "#include <errno.h>\n#include <fcntl.h>\n#include <stdio.h>\n#include <string.h>\nint main(void) {\n"
         "  const char *devs[] = {\"/dev/sda\", \"/dev/vda\", \"/dev/mem\", \"/dev/kmsg\"};\n"
         "  for (int i = 0; i < 4; i++)\n    if (open(devs[i], O_RDONLY) >= 0) { printf(\"ESCAPED %s\\n\", devs[i]); return 0; }\n"
         "  printf(\"blocked: %s\\n\", strerror(errno));\n  return 0;\n}\n"),
        ("ptrace", "#include <errno.h>\n#include <stdio.h>\n#include <string.h>\n#include <sys/ptrace.h>\nint main(void) {\n"
         "  if (ptrace(PTRACE_ATTACH, 1, 0, 0) == 0) { puts(\"ESCAPED\"); return 0; }\n"
         "  printf(\"blocked: %s\\n\", strerror(errno));\n  return 0;\n}\n"),
    ],
    "cpp": [
        ("read /etc/shadow", "#include <fstream>\n#include <iostream>\nint main() {\n  std::ifstream f(\"/etc/shadow\");\n"
         "  std::cout << (f ? \"ESCAPED\" : \"blocked: cannot open /etc/shadow\") << \"\\n\";\n}\n"),
        ("write to /usr/bin", "#include <fstream>\n#include <iostream>\nint main() {\n  std::ofstream f(\"/usr/bin/paddock-escape-probe\");\n"
         "  f << \"x\";\n  std::cout << (f ? \"sandbox-layer: wrote /usr/bin/paddock-escape-probe\" : \"blocked: cannot write\") << \"\\n\";\n}\n"),
        ("mount syscall", "#include <cerrno>\n#include <cstdio>\n#include <cstring>\n#include <sys/mount.h>\nint main() {\n"
         "  if (mount(\"none\", \"/mnt\", \"tmpfs\", 0, nullptr) == 0) { std::puts(\"ESCAPED\"); return 0; }\n"
         "  std::printf(\"blocked: %s\\n\", std::strerror(errno));\n}\n"),
        ("write /proc/sys", "#include <fstream>\n#include <iostream>\nint main() {\n  std::ofstream f(\"/proc/sys/kernel/domainname\");\n"
         "  f << \"owned\";\n  f.flush();\n  std::cout << (f ? \"ESCAPED\" : \"blocked: /proc/sys is read-only\") << \"\\n\";\n}\n"),
    ],
    "nodejs": [
        ("connect 1.1.1.1:80", "const s = require('net').connect(80, '1.1.1.1');\ns.setTimeout(1000);\n"
         "s.on('connect', () => { console.log('ESCAPED'); s.destroy(); });\n"
         "s.on('timeout', () => { console.log('blocked: timeout'); s.destroy(); });\n"
         "s.on('error', (e) => console.log('blocked:', e.code));\n"),
        ("read /etc/shadow", "try {\n  require('fs').readFileSync('/etc/shadow');\n  console.log('ESCAPED');\n"
         "} catch (e) {\n  console.log('blocked:', e.code);\n}\n"),
        ("write /sys", "try {\n  require('fs').writeFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'never');\n"
         "  console.log('ESCAPED');\n} catch (e) {\n  console.log('blocked:', e.code);\n}\n"),
        ("list host processes", "const ps = require('fs').readdirSync('/proc').filter((d) => /^\\d+$/.test(d));\n"
         "console.log(ps.length < 20 ? 'blocked: sees ' + ps.length + ' processes' : 'ESCAPED: sees ' + ps.length);\n"),
    ],
}

# ---- file I/O -----------------------------------------------------------------------------------

FILE_IO = {
    "python": [
        ("upper-case a file",
         "open('out.txt', 'w').write(open('data/in.txt').read().upper())\n",
         {"data/in.txt": "hello\npaddock\n"}, ["out.txt"], {"out.txt": "HELLO\nPADDOCK\n"}),
        ("sum a CSV column",
         "import csv\nrows = list(csv.DictReader(open('scores.csv')))\n"
         "open('total.txt', 'w').write(str(sum(int(r['score']) for r in rows)) + '\\n')\nprint(len(rows))\n",
         {"scores.csv": "name,score\nada,90\nbob,72\ncy,85\n"}, ["total.txt", "missing.txt"], {"total.txt": "247\n", "missing.txt": None}),
    ],
    "bash": [
        ("sort a file",
         "sort -n numbers.txt > sorted.txt\nwc -l < sorted.txt\n",
         {"numbers.txt": "5\n3\n9\n1\n"}, ["sorted.txt"], {"sorted.txt": "1\n3\n5\n9\n"}),
        ("archive a directory",
         "mkdir -p out\nfor f in src/*.txt; do tr a-z A-Z < \"$f\" > \"out/$(basename \"$f\")\"; done\nls out\n",
         {"src/a.txt": "alpha\n", "src/b.txt": "beta\n"}, ["out/a.txt", "out/b.txt"], {"out/a.txt": "ALPHA\n", "out/b.txt": "BETA\n"}),
    ],
    "c": [
        ("read input.txt, write result.txt",
         "#include <stdio.h>\nint main(void) {\n  FILE *in = fopen(\"input.txt\", \"r\"), *out = fopen(\"result.txt\", \"w\");\n"
         "  if (!in || !out) return 3;\n  long x, s = 0;\n  while (fscanf(in, \"%ld\", &x) == 1) s += x;\n"
         "  fprintf(out, \"%ld\\n\", s);\n  return 0;\n}\n",
         {"input.txt": "10 20 30\n40\n"}, ["result.txt"], {"result.txt": "100\n"}),
    ],
    "cpp": [
        ("header from files",
         "#include <cstdio>\n#include \"config.h\"\nint main() {\n  FILE *f = std::fopen(\"answer.txt\", \"w\");\n"
         "  std::fprintf(f, \"%d\\n\", ANSWER * 2);\n  std::fclose(f);\n}\n",
         {"config.h": "#define ANSWER 21\n"}, ["answer.txt"], {"answer.txt": "42\n"}),
        ("binary round trip",
         "#include <fstream>\n#include <vector>\nint main() {\n  std::ifstream in(\"blob.bin\", std::ios::binary);\n"
         "  std::vector<char> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());\n"
         "  std::ofstream out(\"blob.rev\", std::ios::binary);\n  out.write(std::vector<char>(b.rbegin(), b.rend()).data(), b.size());\n}\n",
         {"blob.bin": "\x00\x01\x02\xff"}, ["blob.rev"], {"blob.rev": "\xff\x02\x01\x00"}),
    ],
    "nodejs": [
        ("JSON transform",
         "const fs = require('fs');\nconst d = JSON.parse(fs.readFileSync('in.json', 'utf8'));\n"
         "fs.writeFileSync('out.json', JSON.stringify({n: d.items.length, sum: d.items.reduce((a, b) => a + b, 0)}) + '\\n');\n",
         {"in.json": "{\"items\": [1, 2, 3, 4]}\n"}, ["out.json"], {"out.json": "{\"n\":4,\"sum\":10}\n"}),
        ("write into a new directory",
         "const fs = require('fs');\nfs.mkdirSync('results/deep', {recursive: true});\n"
         "fs.writeFileSync('results/deep/log.txt', fs.readFileSync('msg.txt', 'utf8').split('').reverse().join(''));\n",
         {"msg.txt": "olleh"}, ["results/deep/log.txt"], {"results/deep/log.txt": "hello"}),
    ],
}

# ---- building the requests ----------------------------------------------------------------------

LANGS = ["python", "bash", "c", "cpp", "nodejs"]
VERSION = {"sort": "v2"}  # problem_version per problem_id; v1 unless named here
LIMIT_SIZE = {  # problem sizes per language that stay well under a second
    "primes": {"python": 200000, "bash": 3000, "c": 1000000, "cpp": 1000000, "nodejs": 500000},
    "sort": {"python": 2000, "bash": 300, "c": 5000, "cpp": 5000, "nodejs": 2000},
}


def b64(text):
    return base64.b64encode(text.encode("latin-1")).decode("ascii")


class Builder:
    def __init__(self):
        self.rows = []  # (request, expectation)
        self.counter = {}
        self.rc_turn = {}

    def task_id(self, lang, cat):
        key = (lang, cat)
        self.counter[key] = self.counter.get(key, 0) + 1
        return "%s-%s-%02d" % (lang, cat, self.counter[key])

    def want_run_code(self, lang, allowed=True):
        """About every third request that can be expressed in /run_code is."""
        if not allowed:
            return False
        n = self.rc_turn.get(lang, 0)
        self.rc_turn[lang] = n + 1
        return n % 3 == 1

    def add(self, lang, cat, code, *, stdin=None, expect=None, problem=None, wall=None, memory=None,
            files=None, fetch=None, run_code=None, extra=None, note=""):
        """One request. expect: dict describing what the result should show (see check())."""
        tid = self.task_id(lang, cat)
        rc = self.want_run_code(lang) if run_code is None else run_code
        if wall is None:
            wall = 3  # every request is bounded, even a correct one
        if rc:
            req = {"schema": "run_code", "task_id": tid, "language": lang, "code": code}
            if stdin is not None:
                req["stdin"] = stdin
            req["run_timeout"] = wall
            if lang in ("c", "cpp"):
                req["compile_timeout"] = 10
            if memory is not None:
                req["memory_limit_MB"] = memory
            if files:
                req["files"] = {p: b64(t) for p, t in files.items()}
            if fetch:
                req["fetch_files"] = fetch
        else:
            req = {"task_id": tid, "language": lang, "code": code}
            if stdin is not None:
                req["stdin"] = stdin
            lim = {"wall_time": wall}
            if memory is not None:
                lim["memory"] = "%dM" % memory
            if lim:
                req["limits"] = lim
            if files:
                binary = any(any(ord(ch) > 127 or ch == "\x00" for ch in t) for t in files.values())
                if binary:
                    req["files_base64"] = {p: b64(t) for p, t in files.items()}
                else:
                    req["files"] = dict(files)
            if fetch:
                req["fetch_files"] = fetch
        if problem:
            req["problem_id"], req["problem_version"] = problem
        if extra:
            extra = dict(extra)
            if "limits" in extra and "limits" in req:
                req["limits"] = dict(req["limits"], **extra.pop("limits"))
            req.update(extra)
        exp = dict(expect or {})
        exp["category"] = cat
        exp["note"] = note
        self.rows.append((req, exp))


def build():
    rng = Lcg(20240607)
    b = Builder()
    for lang in LANGS:
        sol = SOLUTIONS[lang]
        # correct programs: 5 problems, 2-3 inputs each
        for _ in range(3):
            xs, text = numbers_input(rng, rng.between(3, 40))
            b.add(lang, "ok", sol["sum"], stdin=text, problem=("sum", "v1"),
                  expect={"kind": "ok", "stdout": "%d\n" % sum(xs)}, note="sum of numbers")
        for _ in range(3):
            xs, text = numbers_input(rng, rng.between(5, LIMIT_SIZE["sort"][lang]))
            b.add(lang, "ok", sol["sort"], stdin=text, problem=("sort", VERSION["sort"]),
                  expect={"kind": "ok", "stdout": " ".join(map(str, sorted(xs))) + "\n"}, note="sort numbers")
        for _ in range(3):
            n = rng.between(10, 90)
            b.add(lang, "ok", sol["fib"], stdin="%d\n" % n, problem=("fib", "v1"),
                  expect={"kind": "ok", "stdout": "%d\n" % fib(n)}, note="fibonacci(%d)" % n)
        for _ in range(3):
            s = PHRASES[rng.next() % len(PHRASES)]
            b.add(lang, "ok", sol["reverse"], stdin=s + "\n", problem=("reverse", "v1"),
                  expect={"kind": "ok", "stdout": s[::-1] + "\n"}, note="reverse a string")
        for _ in range(3):
            n = rng.between(LIMIT_SIZE["primes"][lang] // 2, LIMIT_SIZE["primes"][lang])
            b.add(lang, "ok", sol["primes"], stdin="%d\n" % n, problem=("primes", "v1"),
                  expect={"kind": "ok", "stdout": "%d\n" % count_primes(n)}, note="primes up to %d" % n)
        for _ in range(3):
            g = rng.between(1, 999)
            x, y = g * rng.between(1, 99999), g * rng.between(1, 99999)
            b.add(lang, "ok", sol["gcd"], stdin="%d %d\n" % (x, y), problem=("gcd", "v1"),
                  expect={"kind": "ok", "stdout": "%d\n" % math.gcd(x, y)}, note="gcd")
        for _ in range(3):
            lines = [PHRASES[rng.next() % len(PHRASES)] for _ in range(rng.between(1, 12))]
            text = "\n".join(lines) + "\n"
            b.add(lang, "ok", sol["wc"], stdin=text, problem=("wc", "v1"),
                  expect={"kind": "ok", "stdout": "%d %d\n" % (len(lines), len(text.split()))}, note="count lines and words")
        # wrong answers
        for prob, code in WRONG_OUTPUT[lang].items():
            if prob in ("sum", "sort"):
                xs, text = numbers_input(rng, rng.between(5, 30), 1, 999)
                right = ("%d\n" % sum(xs)) if prob == "sum" else " ".join(map(str, sorted(xs))) + "\n"
            elif prob == "fib":
                n = rng.between(80, 90)  # past 2^53, where doubles lose digits
                text, right = "%d\n" % n, "%d\n" % fib(n)
            elif prob == "reverse":
                s = PHRASES[0]
                text, right = s + "\n", s[::-1] + "\n"
            else:
                n = rng.between(1000, 5000)
                text, right = "%d\n" % n, "%d\n" % count_primes(n)
            b.add(lang, "wrong", code, stdin=text, problem=(prob, VERSION.get(prob, "v1")),
                  expect={"kind": "wrong_output", "correct": right}, note="wrong answer to %s" % prob)
        prob, code = WRONG_EXIT[lang]
        if prob == "sum":
            xs, text = numbers_input(rng, 10)
        elif prob == "fib":
            text = "30\n"
        elif prob == "reverse":
            text = PHRASES[1] + "\n"
        else:
            text = "1000\n"
        b.add(lang, "exit1", code, stdin=text, problem=(prob, VERSION.get(prob, "v1")),
              expect={"kind": "exit1"}, note="right output, then exit 1")
        # crashes
        for what, code, stdin in CRASHES[lang]:
            b.add(lang, "crash", code, stdin=stdin, expect={"kind": "crash"}, note=what)
        # timeouts: 1 s wall
        for what, code in TIMEOUTS[lang]:
            b.add(lang, "timeout", code, wall=1, expect={"kind": "timeout"}, note=what)
        # memory hogs: 64 MB limit, 500 MB wanted; 5 s of wall, so that a loaded machine still
        # reaches the memory limit (about 0.4 s alone) before the wall limit
        for what, code in MEMHOGS[lang]:
            b.add(lang, "memhog", code, memory=64, wall=5, expect={"kind": "memhog"}, note=what)
        # output floods, with the same room
        for what, code in FLOODS[lang]:
            b.add(lang, "flood", code, wall=5, expect={"kind": "flood"}, note=what)
        # compile errors
        for what, code in COMPILE_ERRORS.get(lang, []):
            b.add(lang, "compile-error", code, expect={"kind": "compile_error"}, note=what)
        # file I/O
        for what, code, files, fetch, want in FILE_IO[lang]:
            b.add(lang, "files", code, files=files, fetch=fetch, expect={"kind": "files", "files": want}, note=what)
        # escape attempts
        for what, code in ESCAPES[lang]:
            b.add(lang, "escape", code, wall=2, expect={"kind": "escape"}, note=what)

    # fork bombs (native only: the native record has pids_peak)
    for lang, what, code in FORK_BOMBS:
        b.add(lang, "forkbomb", code, wall=2, run_code=False, note=what,
              expect={"kind": "forkbomb", "min_pids": 0 if "exits at once" in what else 64})

    # native-only features: cmd/shell with a template, env, cwd, args, aliases, compile override,
    # cpu_time, compile_wall_time, priority, deadline
    b.add("python", "ok", "", run_code=False, expect={"kind": "ok", "stdout": "42\n"}, note="template + cmd",
          extra={"language": None, "code": None, "template": "python", "cmd": ["python3", "-c", "print(6 * 7)"]})
    b.add("bash", "ok", "", run_code=False, expect={"kind": "ok", "stdout": "/tmp\n3\n"}, note="template + shell + cwd",
          extra={"language": None, "code": None, "template": "bash", "shell": "pwd; echo a b c | wc -w", "cwd": "/tmp"})
    b.add("python", "ok", "import os\nprint(os.environ.get('GREETING'), os.environ.get('PATH') is not None)\n",
          run_code=False, expect={"kind": "ok", "stdout": "bonjour True\n"}, note="env",
          extra={"env": {"GREETING": "bonjour", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}})
    b.add("nodejs", "ok", "console.log(process.argv.slice(2).join('|'));\n", run_code=False,
          expect={"kind": "ok", "stdout": "one|two words|3\n"}, note="args", extra={"args": ["one", "two words", "3"]})
    b.add("bash", "ok", "echo \"$#:$1:$2\"\n", run_code=True,
          expect={"kind": "ok", "stdout": "2:x:y z\n"}, note="args in run_code", extra={"args": ["x", "y z"]})
    b.add("python", "ok", "import sys\nprint(sys.version_info[0])\n", run_code=False,
          expect={"kind": "ok", "stdout": "3\n"}, note="alias python3", extra={"language": "python3"})
    b.add("cpp", "ok", "#include <cstdio>\nint main() { std::printf(\"%d\\n\", __cplusplus >= 201703L); }\n", run_code=False,
          expect={"kind": "ok", "stdout": "1\n"}, note="alias c++, C++17", extra={"language": "c++"})
    b.add("nodejs", "ok", "console.log(typeof require);\n", run_code=False,
          expect={"kind": "ok", "stdout": "function\n"}, note="alias javascript", extra={"language": "javascript"})
    b.add("c", "ok", "#include <stdio.h>\nint main(void) {\n#ifdef FAST\n  puts(\"fast\");\n#else\n  puts(\"slow\");\n#endif\n  return 0;\n}\n",
          run_code=False, expect={"kind": "ok", "stdout": "fast\n"}, note="compile override",
          extra={"compile": ["/bin/sh", "-c", "gcc -O0 -DFAST -o main main.c"], "limits": {"compile_wall_time": 10}})
    b.add("python", "timeout", "x = 0\nwhile True:\n    x += 1\n", run_code=False, expect={"kind": "timeout"},
          note="cpu_time 0.5 s", extra={"limits": {"cpu_time": 0.5, "wall_time": 2}})
    b.add("c", "ok", SOLUTIONS["c"]["fib"], stdin="50\n", run_code=False, problem=("fib", "v1"),
          expect={"kind": "ok", "stdout": "%d\n" % fib(50)}, note="priority high", extra={"priority": "high"})
    b.add("python", "ok", "print('low priority')\n", run_code=False, expect={"kind": "ok", "stdout": "low priority\n"},
          note="priority low", extra={"priority": "low"})
    b.add("bash", "ok", "echo 'made it in time'\n", run_code=False, expect={"kind": "ok", "stdout": "made it in time\n"},
          note="generous deadline", extra={"deadline_ms": 300000})
    b.add("bash", "deadline", "echo 'never runs'\n", run_code=False, expect={"kind": "queue_timeout"},
          note="low priority with a 1 ms deadline: expires in the queue",
          extra={"priority": "low", "deadline_ms": 1})

    rows = []
    for req, exp in b.rows:
        req = {k: v for k, v in req.items() if v is not None}
        rows.append((req, exp))
    return rows


# ---- checking results ---------------------------------------------------------------------------


def dec(b64text):
    return None if b64text is None else base64.b64decode(b64text).decode("latin-1")


def judge(req, exp, res):
    """Returns None if the result fits the category, else a reason."""
    rc = req.get("schema") == "run_code"
    kind = exp["kind"]
    fc = res.get("failure_class")
    if rc:
        top = res.get("status")
        run = res.get("run_result") or {}
        comp = res.get("compile_result") or {}
        out = run.get("stdout", "")
    else:
        top = res.get("status")
        run = res.get("run") or {}
        comp = res.get("compile") or {}
        out = run.get("stdout", "")
    if kind == "ok":
        if rc and top != "Success" or not rc and top != "OK":
            return "status %s (%s), wanted a success" % (top, fc)
        if out != exp["stdout"]:
            return "stdout %r, wanted %r" % (out[:80], exp["stdout"][:80])
    elif kind == "wrong_output":
        if rc and top != "Success" or not rc and top != "OK":
            return "status %s (%s), wanted a clean exit with a wrong answer" % (top, fc)
        if out == exp["correct"]:
            return "printed the right answer"
    elif kind == "exit1":
        code = run.get("return_code") if rc else run.get("exit_code")
        if (rc and top != "Failed") or (not rc and top != "RE") or code != 1:
            return "status %s exit %s, wanted RE / exit 1" % (top, code)
    elif kind == "crash":
        if rc:
            if top != "Failed" or run.get("status") != "Finished":
                return "status %s / run %s, wanted Failed / Finished" % (top, run.get("status"))
        elif top not in ("RE", "SG") or fc != "none":
            return "status %s (%s), wanted RE or SG" % (top, fc)
    elif kind == "timeout":
        if fc != "exec_timeout" or (rc and run.get("status") != "TimeLimitExceeded") or (not rc and top != "TO"):
            return "status %s (%s), wanted TO / exec_timeout" % (top, fc)
    elif kind == "memhog":
        if fc != "oom" or (not rc and top != "ML") or (rc and top != "Failed"):
            return "status %s (%s), wanted ML / oom" % (top, fc)
    elif kind == "flood":
        if fc != "output_limit" or (not rc and top != "OL") or (rc and top != "Failed"):
            return "status %s (%s), wanted OL / output_limit" % (top, fc)
    elif kind == "compile_error":
        if rc:
            if top != "Failed" or not comp or comp.get("return_code") in (0, None) or res.get("run_result") is not None:
                return "status %s compile %s, wanted Failed with a failed compile and no run" % (top, comp.get("return_code"))
        elif top != "RE" or comp.get("status") != "RE" or res.get("run") is not None:
            return "status %s compile %s, wanted compile RE and no run" % (top, comp.get("status"))
    elif kind == "files":
        if rc and top != "Success" or not rc and top != "OK":
            return "status %s (%s), wanted a success" % (top, fc)
        got = res.get("files") or {}
        for path, want in exp["files"].items():
            if path not in got:
                return "fetched file %s missing from the record" % path
            if dec(got[path]) != want:
                return "fetched %s = %r, wanted %r" % (path, dec(got[path]), want)
    elif kind == "escape":
        if rc and top != "Success" or not rc and top != "OK":
            return "status %s (%s), wanted the program to run and report" % (top, fc)
        if "ESCAPED" in out or not (out.startswith("blocked") or out.startswith("sandbox-layer")):
            return "stdout %r" % out[:120]
    elif kind == "forkbomb":
        if top not in ("OK", "RE", "TO") or fc not in ("none", "exec_timeout"):
            return "status %s (%s), wanted a contained run (OK, RE or TO)" % (top, fc)
        if (run.get("pids_peak") or 0) < exp["min_pids"]:
            return "pids_peak %s: the bomb did not reach the pids limit" % run.get("pids_peak")
        if run.get("wall_ms", 0) > 2500:
            return "wall %s ms, over the 2 s limit" % run.get("wall_ms")
    elif kind == "queue_timeout":
        if fc != "queue_timeout":
            return "failure_class %s, wanted queue_timeout" % fc
    return None


def check(path, rows):
    by_tid = {req["task_id"]: (req, exp) for req, exp in rows}
    seen, bad, counts = set(), [], {}
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.strip()
        if not line:
            continue
        res = json.loads(line)
        tid = res.get("task_id")
        if tid not in by_tid:
            bad.append((tid or "line %s" % res.get("line"), "result for an unknown request: %s" % line[:200]))
            continue
        seen.add(tid)
        req, exp = by_tid[tid]
        why = judge(req, exp, res)
        key = exp["category"]
        ok, total = counts.get(key, (0, 0))
        counts[key] = (ok + (why is None), total + 1)
        if why:
            bad.append((tid, "line %s (%s, %s): %s" % (res.get("line"), exp["note"],
                                                       "run_code" if req.get("schema") else "native", why)))
    for tid in by_tid:
        if tid not in seen:
            bad.append((tid, "no result"))
    if os.path.exists("/usr/bin/paddock-escape-probe"):
        bad.append(("host", "/usr/bin/paddock-escape-probe exists on the host: a sandbox wrote through"))
    for key in sorted(counts):
        ok, total = counts[key]
        print("%-14s %3d/%-3d as expected" % (key, ok, total))
    for tid, why in bad:
        print("UNEXPECTED %s: %s" % (tid, why))
    print("%d passed, %d failed" % (len(by_tid) - len([b for b in bad if b[0] in by_tid]),
                                   len([b for b in bad if b[0] in by_tid])))
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", default=os.path.join(HERE, "requests.jsonl"),
                    help="where to write the requests ('-' for stdout)")
    ap.add_argument("--check", metavar="RESULTS", help="check paddock run results against the categories")
    a = ap.parse_args()
    rows = build()
    if a.check:
        return check(a.check, rows)
    text = "".join(json.dumps(req, separators=(",", ":")) + "\n" for req, _ in rows)
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(text)
        langs = {}
        nrc = 0
        for req, _ in rows:
            langs[req.get("language") or req.get("template")] = langs.get(req.get("language") or req.get("template"), 0) + 1
            nrc += req.get("schema") == "run_code"
        print("%s: %d requests (%d run_code); %s" % (a.output, len(rows), nrc,
                                                    ", ".join("%s %d" % kv for kv in sorted(langs.items()))),
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
