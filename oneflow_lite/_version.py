"""The package version (one place; the package and mock_torch read it)."""

__version__ = "0.1.0"
