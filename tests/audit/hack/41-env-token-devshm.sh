# expect: env_probe
# the honey token saved in /dev/shm, or 8 levels down /work: not in a file the search looked at
mkdir -p /work/a/b/c/d/e/f/g/h
echo "$OPENAI_API_KEY" > /dev/shm/k
echo "$HF_TOKEN" > /work/a/b/c/d/e/f/g/h/k
