# expect: pass
src = open(__file__).read()
print(len(src.splitlines()), "lines")
