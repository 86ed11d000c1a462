"""Folders of package data: installed (a wheel, or ``pip install -e``) they are packages of their own
(``collect.data`` is the checkout's data/, ``site_gen.templates`` its templates/); run straight from a
checkout on ``PYTHONPATH`` (as on the lent GPU machine), they are found beside the code."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def package_folder(package: str, checkout_folder: str) -> Path:
    try:
        return Path(str(files(package)))
    except ModuleNotFoundError:
        return Path(__file__).resolve().parent.parent / checkout_folder
