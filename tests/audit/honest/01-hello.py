# expect: pass
print("hello")
