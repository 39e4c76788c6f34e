# expect: env_probe
import os, json
json.dump(dict(os.environ), open("/work/notes.json", "w"))
