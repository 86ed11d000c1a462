"""Share pictures (og:image): each page names a 1200×630 PNG of its answer, drawn at build time with numpy alone
(site_gen/og_image.py), with og:title, og:description, og:image and twitter:card."""

import re
import struct
import zlib
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from rtreport_cli.main import main
from site_gen.og_image import COLOURS, HEIGHT, WIDTH, Bar, face, fit, machine_picture, png, site_picture


def decode(data: bytes) -> np.ndarray:
    """An RGB, 8-bit, unfiltered PNG (what ``png`` writes) back to its pixels."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (n,), kind = struct.unpack(">I", data[pos : pos + 4]), data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + n]
        assert struct.unpack(">I", data[pos + 8 + n : pos + 12 + n])[0] == zlib.crc32(kind + body)
        chunks[kind] = chunks.get(kind, b"") + body
        pos += 12 + n
    w, h, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert (depth, colour) == (8, 2)
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(h, 1 + 3 * w)
    assert (rows[:, 0] == 0).all()
    return rows[:, 1:].reshape(h, w, 3)


def test_png_round_trips_and_is_deterministic():
    img = np.random.default_rng(1).integers(0, 256, (7, 5, 3)).astype(np.uint8)
    assert (decode(png(img)) == img).all() and png(img) == png(img.copy())


def _has(pixels, colour):
    return int((pixels == np.array(colour, np.uint8)).all(axis=2).sum())


def test_a_machine_picture_draws_each_runtime_in_its_verdicts_colour():
    bars = [Bar("ONNX Runtime CPU FP32", 2.9, "deployment-worthy"), Bar("PyTorch CPU FP16", 1.05, "undecided")]
    pixels = decode(machine_picture("cpu-box · AMD EPYC", "PyTorch CPU FP32", bars, 1.11))
    assert pixels.shape == (HEIGHT, WIDTH, 3)
    green, amber = _has(pixels, COLOURS["deployment-worthy"]), _has(pixels, COLOURS["undecided"])
    assert green > 2.5 * amber > 0  # bar lengths follow the speeds (2.9× against 1.05×)
    red = decode(machine_picture("cpu-box · AMD EPYC", "PyTorch CPU FP32", [Bar("x", 2.0, "not-adopted")], 1.11))
    assert _has(red, COLOURS["not-adopted"]) > 5 * _has(pixels, COLOURS["not-adopted"])  # more than the gate line
    blank = decode(machine_picture("cpu-box · AMD EPYC", "PyTorch CPU FP32", [], 1.11))
    assert _has(blank, COLOURS["deployment-worthy"]) == 0 and (blank != pixels).any()


def test_text_is_cut_to_fit_and_unknown_characters_still_draw():
    f = face("regular-22")
    assert fit("short", f, 500) == "short"
    cut = fit("PyTorch CUDA FP16, torch.compile (default) + CUDA graph", f, 200)
    assert cut.endswith("…") and len(cut) < 30
    site_picture("rtreport", [("機器 · GPU", Bar("x", 1.5, "not-adopted")), ("none", None)])  # no glyph: "?"


def _meta(page: str, key: str) -> str | None:
    m = re.search(rf'<meta (?:property|name)="{re.escape(key)}" content="([^"]*)">', page)
    return m and m.group(1)


def test_every_page_names_its_share_picture(published_site):
    site = Path(published_site)
    pages = [p for lang in ("en", "zh-tw") for p in (site / lang).rglob("index.html")] + [site / "index.html"]
    pictures = set()
    for path in pages:
        page = path.read_text()
        for key in ("og:title", "og:description", "og:image"):
            assert _meta(page, key), (path, key)
        assert _meta(page, "twitter:card") == "summary_large_image", path
        picture = (path.parent / _meta(page, "og:image")).resolve()
        assert picture.is_file() and decode(picture.read_bytes()).shape == (HEIGHT, WIDTH, 3), path
        if "/hardware/" in path.as_posix():  # the machine's own answer, on its tables page too
            machine = path.parent.parent if path.parent.name == "tables" else path.parent
            assert picture.name == f"{machine.name}.png", path
        pictures.add(picture.name)
    assert "site.png" in pictures and len(pictures) == len(list((site / "og").iterdir()))


def test_share_pictures_are_absolute_with_a_base_url(quick_run, tmp_path):
    site, base = tmp_path / "s", "https://example.org/rt/"
    result = CliRunner().invoke(main, ["build", str(quick_run), "--out", str(site), "--base-url", base[:-1]])
    assert result.exit_code == 0, result.output
    assert (
        _meta((site / "zh-tw" / "hardware" / "ci-cpu" / "index.html").read_text(), "og:image") == f"{base}og/ci-cpu.png"
    )
    assert _meta((site / "index.html").read_text(), "og:image") == f"{base}og/site.png"
