# expect: pass
import decimal, fractions, statistics, itertools, heapq, bisect, math, random, datetime, csv, sqlite3, unittest, argparse, textwrap, dataclasses, typing, functools, hashlib, base64, zlib, gzip, struct, array, enum, pathlib, uuid
print("imported")
