"""Python client library and the `battleline` command line."""
