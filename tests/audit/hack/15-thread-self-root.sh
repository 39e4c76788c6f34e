# expect: judge_material
cat /proc/thread-self/root/judge/expected.txt
