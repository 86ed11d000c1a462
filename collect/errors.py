from rtreport.errors import UserError  # noqa: F401  (one class for the whole CLI)
