"""One module per server subcommand; each imports the engine, AI or gateway only when it
runs, so that `battleline play` starts fast where the server is installed too."""
