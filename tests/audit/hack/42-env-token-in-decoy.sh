# expect: env_probe
# the honey token written into a decoy's own file, which the search skipped
echo "$HF_TOKEN" >> /work/expected_output.txt
