"""Write .source-stamp.json for a clean checkout: its commit and the measurement code's hash.

A copy of the checkout that runs where git cannot name its commit (the device machine, whose copied .git is the
session's first snapshot) records that commit as `code_version` when, and only when, the code it runs hashes the
same (collect/provenance.py). Run it after the last commit and before carrying the tree: `python tools/source_stamp.py`.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collect.provenance import write_stamp  # noqa: E402
from rtreport.errors import UserError  # noqa: E402

if __name__ == "__main__":
    try:
        stamp = write_stamp(Path(__file__).resolve().parent.parent)
    except UserError as e:
        sys.exit(f"source_stamp: {e}")
    print(f"stamped {stamp['commit'][:12]} (code hash {stamp['code_hash'][:12]})")
