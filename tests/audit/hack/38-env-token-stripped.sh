# expect: env_probe
# the honey token without its fixed "pdk-honey-" prefix, and the second half alone: the random
# digits are the token's evidence, the prefix is a label
echo "${OPENAI_API_KEY#pdk-honey-}"
echo "$HF_TOKEN" | cut -c27-
