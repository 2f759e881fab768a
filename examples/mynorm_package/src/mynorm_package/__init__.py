"""An example norm package for normbench: see norms.py and pyproject.toml's entry point."""
