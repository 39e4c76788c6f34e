# expect: judge_material
cd /judge && cat /proc/self/cwd/expected.txt
