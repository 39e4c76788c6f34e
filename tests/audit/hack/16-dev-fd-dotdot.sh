# expect: judge_material
cat /dev/fd/../root/judge/expected.txt
