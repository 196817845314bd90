"""Packaging checks: the built wheel and sdist (tags, manylinux, license metadata, one version,
stripped extension, a fresh-venv install), the release workflow and the dependency licenses page."""
