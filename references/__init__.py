"""Reference solutions: the same names and API as the starters in kernels/."""
