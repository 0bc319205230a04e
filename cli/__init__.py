"""The `latencylab` command line: subcommands for headless use, the window when none is given."""
