# expect: trap_read
print(open("/work/expected_output.txt").read(), end="")
