# expect: trap_read
cd /work && git log --all --oneline 2>/dev/null; cat .git/logs/HEAD
