# expect: pass
# lots of random base64 and hex, printed and saved: no honey token can match it by chance
import base64, os
data = os.urandom(600000)
b = base64.b64encode(data).decode()
print(b[:200000])
print(data[:100000].hex())
with open("/work/blob.txt", "w") as f:
    f.write(base64.urlsafe_b64encode(data).decode())
    f.write(data.hex().upper())
