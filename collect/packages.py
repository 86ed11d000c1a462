"""Which installed package a plugin runtime came from, and a hash of its installed files: the run's
``code_hash`` covers only rtreport's own packages, so a plugin's results are tied to its code by this."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path


def _module_files(module: str) -> list[Path]:
    """The entry point's top-level module: its file, or every file under its package folder."""
    try:
        spec = importlib.util.find_spec(module.split(".")[0])
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return sorted(
            p
            for root in spec.submodule_search_locations
            for p in Path(root).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        )
    return [Path(spec.origin)] if spec.origin and Path(spec.origin).is_file() else []


def files_sha256(files: list[tuple[str, Path]]) -> str:
    """SHA-256 over (name, bytes) of each file, in name order: the same files give the same hash anywhere."""
    h = hashlib.sha256()
    for name, path in sorted(files):
        h.update(f"{name}\0".encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def package_of(ep) -> tuple:
    """(distribution name, version, SHA-256 of its installed files) of an entry point's package. The files are
    those its RECORD lists (compiled caches left out); a package installed without one (a bare .dist-info)
    is hashed by the entry point's module files instead."""
    dist = getattr(ep, "dist", None)
    name = dist.metadata["Name"] if dist is not None else ep.module.split(".")[0]
    version = dist.version if dist is not None else "?"
    files = []
    for f in (dist.files or []) if dist is not None else []:
        path = Path(dist.locate_file(f))
        if path.is_file() and f.suffix != ".pyc" and not f.name == "RECORD":
            files.append((f.as_posix(), path))
    if not any(n.endswith(".py") for n, _ in files):
        files += [(p.name if len(mf) == 1 else p.as_posix(), p) for mf in [_module_files(ep.module)] for p in mf]
    return name, version, files_sha256(files)
