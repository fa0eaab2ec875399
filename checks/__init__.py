"""Independent checks for the workshop book, and the runner behind `python -m checks`.

Importing this package (and `python -m checks list`) needs only the Python standard library;
numpy, torch and Triton are imported when a check runs.
"""
