"""Package data of rtreport (installed as ``collect.data``): the shipped agent, fixed states and seeds."""
