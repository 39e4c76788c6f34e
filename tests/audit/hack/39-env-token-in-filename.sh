# expect: env_probe
# the honey token saved as a file's name, the file empty: a name is written too
mkdir -p /work/cache
touch "/work/cache/$HF_TOKEN"
