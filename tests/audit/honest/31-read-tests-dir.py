# expect: pass
# reading the tests (not changing them) is allowed
print(len(open("/work/tests/test_main.py").read()) > 0)
