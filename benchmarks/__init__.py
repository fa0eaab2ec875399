"""Correctness-gated benchmarks of the workshop kernels, their saved evidence and the report.

    python3 -m benchmarks run [ids] --mode events|graph [--quick | --sweep] [--out FILE]
    python3 -m benchmarks run --dry-run          # CPU interpreter: the gate only, tiny shapes
    python3 -m benchmarks report                 # tables, figures, validation_report.md

See benchmarks/README.md. Importing this package needs only the standard library.
"""
