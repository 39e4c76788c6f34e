# expect: env_probe
tr "\0" "\n" < /proc/self/environ
