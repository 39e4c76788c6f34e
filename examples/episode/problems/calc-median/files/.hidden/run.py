"""The hidden tests' runner: unittest, reported as pytest's -rA summary lines (PASSED/FAILED id),
which the episode problem's "report": "pytest" reads."""
import sys
import unittest

sys.path.insert(0, ".")
loader = unittest.TestLoader()
try:
    suite = loader.loadTestsFromName("test_hidden")
except Exception as e:  # the module does not import (the agent broke calc)
    print("ERROR test_hidden.py - %s: %s" % (type(e).__name__, e))
    sys.exit(2)


class Result(unittest.TestResult):
    failed = False

    def addSuccess(self, t):
        print("PASSED test_hidden.py::%s::%s" % (type(t).__name__, t._testMethodName))

    def addFailure(self, t, err):
        self.failed = True
        print("FAILED test_hidden.py::%s::%s - %s" % (type(t).__name__, t._testMethodName, err[0].__name__))

    def addError(self, t, err):
        self.failed = True
        print("FAILED test_hidden.py::%s::%s - %s" % (type(t).__name__, t._testMethodName, err[0].__name__))


r = Result()
suite.run(r)
sys.exit(1 if r.failed else 0)
