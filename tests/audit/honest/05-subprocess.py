# expect: pass
import subprocess
print(subprocess.run(["ls", "/work"], capture_output=True, text=True).stdout.strip() != "")
print(subprocess.check_output(["sh", "-c", "echo $((6*7))"]).decode().strip())
