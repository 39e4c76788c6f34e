# paddock's own empty package file (not verl's): verl's verl/utils/__init__.py imports torch and the
# trainer, which the SandboxFusion client below does not need. See ../README.md.
