"""Where a chart's text goes, decided when the site is built: the room a legend below the plot takes and the
margins of every chart (pure). plotly.js draws a chart once when nothing in its margins needs more room than it
was given; with ``automargin`` it measures after drawing and draws again (docs/page-speed.md)."""

from __future__ import annotations


def legend_room(names) -> int:
    """Px a chart grows by for its legend below the plot: a line per entry, two for a wrapped name (what the
    narrowest phone needs; where entries sit side by side the plot keeps the rest)."""
    return 12 + 20 * sum(1 + name.count("<br>") for name in names)


# Margins are set when the site is built, wide enough for what sits in them, and no axis has ``automargin``: with it
# plotly.js measures tick labels and legends after drawing and then draws the whole chart again, which doubled or
# tripled a chart's cost on a phone (docs/page-speed.md). Measured as plotly.js pushed them: edge tick labels need
# 4 px beyond a row chart's 12/16 px; the y tick labels and title of a log axis 51–64 px.
ROW_MARGIN = {"l": 20, "r": 24}
Y_LABELS_LEFT = 72
TITLE_STANDOFF = 6
PHONE_PLOT_WIDTH, WIDE_PLOT_WIDTH = 340, 700  # px a legend row may fill: a 390 px phone, a desktop column


def _text_px(text: str) -> float:
    """About how wide a legend entry's longest line is in 12 px type (a CJK character twice a Latin one)."""
    lines = text.split("<br>")
    return max(sum(12.5 if ord(c) > 0x2E80 else 6.6 for c in line) for line in lines)


def legend_px(names, width: int) -> int:
    """Px a horizontal legend below the plot takes when its rows may be ``width`` px wide. As plotly.js lays it
    out: every entry on one row where they all fit, else in columns as wide as the widest entry (on a phone often
    one entry a row); a row as tall as its tallest entry (a wrapped name is two lines)."""
    names = list(names)
    widths = [46 + _text_px(name) for name in names]
    if not names:
        return 28
    per_row = len(names) if sum(widths) <= width else max(1, int(width // max(widths)))
    rows = [max(1 + name.count("<br>") for name in names[i : i + per_row]) for i in range(0, len(names), per_row)]
    return 28 + sum(19 * n + 2 for n in rows if n)  # its padding, and each row


def set_margins(fig: dict, legend=None, y_labels: bool = False) -> dict:
    """``fig`` with margins fixed for a phone, and in ``fig["wide"]`` the bottom margin for a screen 600 px or
    wider (rtreport.js uses it there): room for the edge tick labels, for the y axis's labels, and for the legend
    below the plot (its names: ``legend``). Where an estimate falls short plotly.js still pushes the margin
    (the chart is right, only drawn twice)."""
    layout = fig["layout"]
    for axis in ("xaxis", "yaxis"):
        if axis in layout:
            layout[axis]["automargin"] = False
            if "title" in layout[axis]:  # a title placed from its tick labels' measured depth, not the font's
                layout[axis]["title"]["standoff"] = TITLE_STANDOFF
    margin = layout["margin"]
    margin.update({k: max(margin[k], v) for k, v in ROW_MARGIN.items()})
    if y_labels:
        margin["l"] = max(margin["l"], Y_LABELS_LEFT)
    if legend is not None:
        names = list(legend)
        base = margin["b"]
        margin["b"] = base + legend_px(names, PHONE_PLOT_WIDTH)
        fig["wide"] = {"margin": {"b": base + legend_px(names, WIDE_PLOT_WIDTH)}}
    return fig
