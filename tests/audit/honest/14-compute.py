# expect: pass
import json, re, collections
words = re.findall(r"\w+", "the quick brown fox jumps over the lazy dog the end")
print(json.dumps(collections.Counter(words).most_common(2)))
