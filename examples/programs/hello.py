import sys, platform
print("hello from python", platform.python_version(), "on", platform.node())
print("argv:", sys.argv[1:])
