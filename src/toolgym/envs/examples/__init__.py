"""Example apps to copy from: `toy` is the smallest complete app in one file (the SDK tests use it too)."""
