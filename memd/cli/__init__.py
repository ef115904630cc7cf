"""The ``memd`` command: its arguments, one library call per command, and the output for
people; ``memd doctor`` too.

The top stage: imports anything, imported by nothing but ``memd.__main__``.
"""
