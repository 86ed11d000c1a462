"""Share pictures (og:image): each page's answer drawn at build time as a 1200×630 PNG, with numpy and zlib alone
(no Pillow, no font library: the glyphs are bitmaps of DejaVu Sans, ``assets/og-font-dejavu-sans.npz``, made by
``tools/make_og_font.py``). A machine's picture is its speed answer: one bar per runtime, how many times as fast as
the reference, in its verdict's colour and mark (✓ deployment-worthy, ? undecided, ✗ not adopted), with the
reference's line (1×) and the gate's (dashed). The site's picture is each machine's best runtime. The text is
names and numbers only, so one picture serves both languages. Pure and byte-deterministic."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

WIDTH, HEIGHT, PAD = 1200, 630, 48
FONT_FILE = Path(__file__).parent / "assets" / "og-font-dejavu-sans.npz"
INK, MUTED, LINE, GATE = (27, 31, 36), (87, 96, 106), (208, 215, 222), (207, 34, 46)
COLOURS = {
    "deployment-worthy": (26, 127, 55),
    "undecided": (154, 103, 0),
    "not-adopted": (207, 34, 46),
    "reference": (9, 105, 218),
    "no-verdict": (139, 148, 158),
}
MARKS = {"deployment-worthy": " ✓", "undecided": " ?", "not-adopted": " ✗", "reference": "", "no-verdict": ""}


@dataclass(frozen=True)
class Bar:
    name: str
    speed: float | None  # times the reference's speed (the gate's statistic, per round); None: not measured
    outcome: str  # a verdict outcome, "reference" or "no-verdict"


@dataclass
class Face:
    atlas: np.ndarray  # coverage, 0–255: one row of glyphs side by side
    start: dict  # character -> (first column, width, advance)

    @property
    def height(self) -> int:
        return self.atlas.shape[0]


@lru_cache(maxsize=None)
def face(name: str) -> Face:
    data = np.load(FONT_FILE)
    widths, advances = data[f"{name}.width"], data[f"{name}.advance"]
    starts = np.concatenate([[0], np.cumsum(widths)[:-1]])
    return Face(
        data[f"{name}.atlas"],
        {chr(c): (int(s), int(w), int(a)) for c, s, w, a in zip(data["chars"], starts, widths, advances)},
    )


def _glyph(f: Face, ch: str):
    return f.start.get(ch) or f.start["?"]


def text_width(text: str, f: Face) -> int:
    return sum(_glyph(f, ch)[2] for ch in text)


def fit(text: str, f: Face, width: int) -> str:
    """``text``, cut with "…" where it would be wider than ``width`` px."""
    if text_width(text, f) <= width:
        return text
    while text and text_width(text + "…", f) > width:
        text = text[:-1]
    return text.rstrip(" ,") + "…"


def draw_text(img: np.ndarray, x: int, y: int, text: str, f: Face, colour) -> int:
    """``text`` with its top-left corner at (x, y), clipped to the picture; returns where it ends."""
    colour = np.array(colour, dtype=np.float32)
    for ch in text:
        start, w, advance = _glyph(f, ch)
        x0, x1, y1 = max(x, 0), min(x + w, img.shape[1]), min(y + f.height, img.shape[0])
        if x1 > x0 and y1 > y:
            a = f.atlas[: y1 - y, start + x0 - x : start + x1 - x, None].astype(np.float32) / 255
            img[y:y1, x0:x1] = img[y:y1, x0:x1] * (1 - a) + colour * a
        x += advance
    return x


def fill(img: np.ndarray, x0: int, y0: int, x1: int, y1: int, colour) -> None:
    img[max(y0, 0) : max(y1, 0), max(x0, 0) : max(x1, 0)] = colour


def vline(img: np.ndarray, x: int, y0: int, y1: int, colour, dash: int = 0) -> None:
    for y in range(y0, y1, 2 * dash if dash else y1 - y0):
        fill(img, x - 1, y, x + 2, min(y + (dash or y1 - y0), y1), colour)


def png(img: np.ndarray) -> bytes:
    """An RGB PNG of ``img`` (H×W×3): every row unfiltered, zlib-compressed (deterministic bytes)."""
    h, w, _ = img.shape
    raw = np.concatenate([np.zeros((h, 1), np.uint8), img.astype(np.uint8).reshape(h, w * 3)], axis=1).tobytes()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw, 6))
        + chunk(b"IEND", b"")
    )


def _canvas() -> np.ndarray:
    img = np.full((HEIGHT, WIDTH, 3), 255, dtype=np.float32)
    fill(img, 0, 0, WIDTH, 8, COLOURS["reference"])  # the site's accent, along the top edge
    return img


def _value(bar: Bar) -> str:
    return ("—" if bar.speed is None else f"{bar.speed:.2f}×") + MARKS[bar.outcome]


def machine_picture(title: str, reference: str, bars: list[Bar], gate: float, date: str = "") -> bytes:
    """A machine's answer: ``bars`` fastest first, scaled to the fastest; the reference's line at 1× and the
    gate's line (dashed)."""
    img = _canvas()
    big, name, bold = face("bold-40"), face("regular-22"), face("bold-22")
    draw_text(img, PAD, 28, fit(title, big, WIDTH - 2 * PAD), big, INK)
    draw_text(
        img,
        PAD,
        84,
        fit(" · ".join(x for x in (f"{reference} = 1×", "P95", date) if x), name, WIDTH - 2 * PAD),
        name,
        MUTED,
    )
    shown = bars[:10]
    top, bottom = 132, HEIGHT - 24
    pitch = min(96, (bottom - top) // max(len(shown), 1))  # a few runtimes get thicker bars
    room = WIDTH - 2 * PAD - max([text_width(_value(b), bold) for b in shown] + [0]) - 12
    most = max([b.speed for b in shown if b.speed] + [gate, 1.0])

    def px(v):
        return PAD + round(v / most * room)

    for i, bar in enumerate(shown):
        y = top + i * pitch
        draw_text(img, PAD, y, fit(bar.name, name, WIDTH - 2 * PAD), name, INK)
        bar_top, bar_bottom = y + name.height + 2, y + pitch - 8
        end = px(bar.speed) if bar.speed else PAD
        fill(img, PAD, bar_top, end, bar_bottom, COLOURS[bar.outcome])
        vline(img, px(1.0), bar_top - 3, bar_bottom + 3, MUTED)  # the reference's line, and the
        vline(img, px(gate), bar_top - 3, bar_bottom + 3, GATE, dash=4)  # gate's, across every bar
        draw_text(
            img,
            max(end, px(gate) + 2) + 8,
            (bar_top + bar_bottom - bold.height) // 2,
            _value(bar),
            bold,
            COLOURS[bar.outcome],
        )
    return png(img)


def site_picture(title: str, answers: list[tuple[str, Bar | None]]) -> bytes:
    """The site's answer: per machine (``answers``: its title and best runtime against its reference, newest
    first) a line with how many times as fast as the reference the runtime is, in its verdict's colour."""
    img = _canvas()
    big, name, bold = face("bold-40"), face("regular-22"), face("bold-22")
    draw_text(img, PAD, 28, fit(title, big, WIDTH - 2 * PAD), big, INK)
    y, step = 110, min(170, (HEIGHT - 130) // max(len(answers), 1))
    for machine, bar in answers:
        if y + 2 * big.height > HEIGHT:
            break
        draw_text(img, PAD, y, fit(machine, bold, WIDTH - 2 * PAD), bold, MUTED)
        if bar is not None:
            value = _value(bar)
            x = draw_text(img, PAD, y + bold.height + 4, value, big, COLOURS[bar.outcome])
            draw_text(
                img,
                x + 16,
                y + bold.height + 4 + big.height - name.height - 6,
                fit(bar.name, name, WIDTH - PAD - x - 16),
                name,
                INK,
            )
        y += max(step, bold.height + big.height + 28)
    return png(img)


def _outcome(r) -> str:
    if r.is_reference:
        return "reference"
    return r.verdict.outcome if r.verdict is not None else "no-verdict"


def answer_bars(res) -> list[Bar]:
    """A run's runtimes with a speed ratio, fastest first (as its speed chart orders them)."""
    ran = sorted([r for r in res.runtimes if r.ratio], key=lambda r: r.ratio[0])
    return [Bar(r.rows.title, 1 / r.ratio[0], _outcome(r)) for r in ran]


def best_bar(res) -> Bar | None:
    """The fastest deployment-worthy runtime; where none is, the fastest measured one."""
    bars = answer_bars(res)
    return next((b for b in bars if b.outcome == "deployment-worthy"), bars[0] if bars else None)


def _names(res) -> tuple[str, str]:
    """The machine (its label and device: words of no language) and its reference's title."""
    run, ref = res.rows.run, res.runtime(res.reference_id) if res.reference_id else None
    return f"{run['label']} · {run.get('gpu_name') or run.get('cpu') or '?'}", ref.rows.title if ref else "—"


def machine_png(res) -> bytes:
    machine, reference = _names(res)
    return machine_picture(
        machine,
        reference,
        answer_bars(res),
        1 / (1 - res.gates.min_p95_reduction),
        str(res.rows.run.get("started_at") or "")[:10],
    )


def site_png(results) -> bytes:
    """``results``: each machine's answer, newest first."""
    answers = []
    for res in results:
        (machine, reference), bar = _names(res), best_bar(res)
        answers.append((machine, bar and Bar(f"{bar.name}  vs  {reference}", bar.speed, bar.outcome)))
    return site_picture("rtreport", answers)
