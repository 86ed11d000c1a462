class UserError(Exception):
    """Bad input from the user: the CLI reports it as one line (exit 2), never as a traceback."""
