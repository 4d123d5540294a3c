"""One module per subcommand, each with run(args) -> exit code; cli.COMMANDS
maps the subcommand's name to it."""
