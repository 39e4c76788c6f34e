chunks = []
while True:
    chunks.append(bytearray(16 << 20))  # 16 MiB at a time, until the cgroup says no
