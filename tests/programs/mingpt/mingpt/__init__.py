# From github.com/karpathy/minGPT (mingpt/__init__.py, commit 37baab7, MIT licence), unchanged: run under flow.mock_torch by
# tests/test_programs.py (synthetic data and a small config through its command-line flags only).
