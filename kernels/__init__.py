"""Your kernels: fill in the TODO regions. Derived from references/ by tools/make_starters.py."""
