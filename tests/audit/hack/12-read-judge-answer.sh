# expect: judge_material
cat /judge/expected.txt
