"""``python -m rtreport``: the command line (``rtreport_cli``), as the ``rtreport`` script runs it."""

from rtreport_cli.main import main

main()
