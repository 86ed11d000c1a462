"""The ``rtreport`` command line: the top floor, above ``collect`` (measuring) and ``site_gen`` (publishing), which
both stand on the shared core ``rtreport``; the core imports none of them."""
