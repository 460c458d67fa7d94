"""The `metaquorum` command line: one module per subcommand family, registered in `main`."""
