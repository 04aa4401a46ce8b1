"""The `toolgym` command line: thin commands over library calls."""
