"""rtreport's core: the command line and what both halves share (the DuckDB contract, labels, statistics)."""
