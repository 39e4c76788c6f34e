# paddock's own empty package file (not verl's): verl's verl/utils/reward_score/__init__.py imports torch and the
# trainer, which the SandboxFusion client below does not need. See ../README.md.
