"""One module per `battleline` subcommand."""
