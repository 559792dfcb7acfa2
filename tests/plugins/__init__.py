"""Code that extends oneflow_lite from outside the package, as a third-party module would."""
