# expect: tamper
import os
os.setxattr("/usr/bin/bash", "user.overlay.opaque", b"y")
