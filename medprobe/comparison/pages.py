"""What every HTML page medprobe writes is made of (the compare report, the leaderboard's pages): one place for
the page's head, its style, tables and interval charts, so that each page reads on a phone as on a desk.

    page("title", body_lines)                                    # a self-contained page: it loads nothing
    table("caption", ["run", "n"], [["a", "12"]], numeric={1})   # a table in its own sideways-scrolling box
    chart(rows, axis, "what it shows")                           # intervals on one axis, labels as text

Text is escaped wherever it goes in; a cell or label that is already HTML says so (`Html`), so a value
like `<0.001` can never be written raw. Pages load nothing: no script, no external style, font or
image (their Content-Security-Policy forbids it); charts are inline SVG. At 390 px (a phone) no page
scrolls sideways: the viewport is the device's, wide tables scroll inside their own box, long words
(paths, commands) wrap, and a chart's labels are text above its marks, which are placed in % of the
width, so nothing is scaled down or cut.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from medprobe.marks import generator_meta

POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #1f1f1f; max-width: 80rem; }
h1, h2, h3, p, li, caption, figcaption, summary { overflow-wrap: anywhere; }
div.scroll { overflow-x: auto; max-width: 100%; margin: 0.5rem 0 1.5rem; }
table { border-collapse: collapse; font-size: 0.9rem; }
caption { caption-side: top; text-align: left; color: #444; padding: 0 0 0.3rem; }
caption { max-width: min(60rem, calc(100vw - 4rem)); position: sticky; left: 0; }
th, td { border: 1px solid #c8c8c8; padding: 0.25rem 0.6rem; vertical-align: top; }
thead th { background: #eef2f7; text-align: left; }
tbody th { text-align: left; font-weight: 600; background: #fbfcfe; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
img { max-width: 100%; }
p.intro { color: #444; max-width: 60rem; }
code { background: #f3f3f3; padding: 0 0.2rem; overflow-wrap: anywhere; }
figure.chart { margin: 0.5rem 0 1.5rem; max-width: 48rem; }
figure.chart figcaption { color: #444; margin-bottom: 0.4rem; }
ul.chart { list-style: none; padding: 0; margin: 0; }
ul.chart li { margin: 0 0 0.15rem; }
ul.chart li.strong span.label { font-weight: 600; }
span.values { color: #333; font-variant-numeric: tabular-nums; }
svg.marks, svg.axis { display: block; width: 100%; overflow: visible; }
@media (max-width: 40rem) {
  body { margin: 0.75rem; } th, td { padding: 0.2rem 0.35rem; } caption { max-width: calc(100vw - 1.5rem); }
}
"""
DASH = "—"


class Html(str):
    """Text that is already HTML (a link, an SVG): written as it is; any other str is escaped."""


def esc(value: object) -> str:
    return value if isinstance(value, Html) else html.escape(str(value))


def page(title: str, body: Sequence[str], *, home: str | None = None, style: str = "") -> str:
    """One self-contained page whose viewport is the device's; `home`: a link back to the site's index."""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            generator_meta(),  # a later compare --html replaces a page only when it carries medprobe's name
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">',
            f"<title>{esc(title)}</title>",
            f"<style>{STYLE}{style}</style>",
            "</head>",
            "<body>",
            *([f'<p><a href="{esc(home)}">medprobe leaderboard</a></p>'] if home else []),
            f"<h1>{esc(title)}</h1>",
            *body,
            "</body>",
            "</html>",
        ]
    )


# --- tables ---------------------------------------------------------------------------------------------


def table_start(caption: str, header: Sequence[str], css: str = "") -> list[str]:
    """A table's opening in its own scrolling box (focusable, so a keyboard can scroll it), its caption and header."""
    return [
        f'<div class="scroll" role="region" tabindex="0" aria-label="{esc(caption)}">',
        f'<table class="{esc(css)}">' if css else "<table>",
        f"<caption>{esc(caption)}</caption>",
        "<thead><tr>" + "".join(f'<th scope="col">{esc(name)}</th>' for name in header) + "</tr></thead>",
        "<tbody>",
    ]


TABLE_END = ["</tbody>", "</table>", "</div>"]


def table_row(cells: Sequence[object], numeric: set[int] = frozenset(), row_header: bool = True) -> str:
    """One row; its first cell heads it (`<th scope="row">`) unless `row_header` is false."""
    parts = []
    for index, value in enumerate(cells):
        if index == 0 and row_header:
            parts.append(f'<th scope="row">{esc(value)}</th>')
        elif index in numeric:
            parts.append(f'<td class="num">{esc(value)}</td>')
        else:
            parts.append(f"<td>{esc(value)}</td>")
    return "<tr>" + "".join(parts) + "</tr>"


def table(
    caption: str,
    header: Sequence[str],
    rows: Sequence[Sequence[object]],
    numeric: set[int] = frozenset(),
    css: str = "",
    row_header: bool = True,
) -> list[str]:
    """A captioned table with column (and row) headers, in a box that scrolls sideways when the page is narrower."""
    return [*table_start(caption, header, css), *(table_row(row, numeric, row_header) for row in rows), *TABLE_END]


# --- interval charts ------------------------------------------------------------------------------------

SHAPES = ("circle", "square", "diamond", "triangle")


@dataclass
class Mark:
    """A value with its interval, drawn as `shape` (filled or open): shape and fill, not colour, tell marks apart."""

    value: float
    low: float | None = None
    high: float | None = None
    shape: str = "circle"
    filled: bool = True
    colour: str = "#12324f"


@dataclass
class ChartRow:
    label: str  # text above the marks (never cut: it wraps)
    values: str  # the numbers in words beside it
    marks: list[Mark] = field(default_factory=list)
    strong: bool = False


@dataclass
class Axis:
    low: float
    high: float
    title: str  # e.g. "acc@10 (%)"
    reference: float | None = None  # zero, or chance: a dashed line on every row
    ticks: int = 5


def nice_top(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is at least `value` (shares: 0.01 to 1)."""
    if not math.isfinite(value) or value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return min((step * power for step in (1, 2, 2.5, 5, 10) if step * power >= value - 1e-12), default=1.0)


def value_axis(values: Sequence[float | None], title: str, reference: float | None = None) -> Axis:
    """0 up to a round top at or above every value (shares: at most 100%)."""
    top = max([v for v in values if v is not None and math.isfinite(v)] + [reference or 0.0, 0.0])
    return Axis(0.0, min(nice_top(top), 1.0), title, reference)


def difference_axis(values: Sequence[float | None], title: str) -> Axis:
    """Symmetric about zero, to a round bound at or above every |value|; zero marked."""
    bound = nice_top(max([abs(v) for v in values if v is not None and math.isfinite(v)] + [0.0]) or 0.01)
    return Axis(-bound, bound, title, 0.0, ticks=4)


def at(axis: Axis, value: float) -> float:
    """Where `value` goes, in % of the width (kept 1.5% off both edges, so a mark at an end shows whole)."""
    share = (value - axis.low) / (axis.high - axis.low) if axis.high > axis.low else 0.5
    return 1.5 + 97.0 * max(0.0, min(1.0, share))


def marker(mark: Mark, x: float, y: int) -> str:
    fill = mark.colour if mark.filled else "#fff"
    shapes = {
        "circle": '<circle cx="0" cy="0" r="4"',
        "square": '<rect x="-4" y="-4" width="8" height="8"',
        "diamond": '<polygon points="0,-5 5,0 0,5 -5,0"',
        "triangle": '<polygon points="0,-5 5,4 -5,4"',
    }
    shape = shapes.get(mark.shape, shapes["circle"])
    return f'<svg x="{x:.2f}%" y="{y}" overflow="visible">{shape} fill="{fill}" stroke="{mark.colour}" stroke-width="1.5"/></svg>'


def axis_svg(axis: Axis) -> str:
    """The tick values along the top of a chart, in %."""
    parts = ['<svg class="axis" height="16" aria-hidden="true">']
    for index in range(axis.ticks + 1):
        value = axis.low + (axis.high - axis.low) * index / axis.ticks
        anchor = "start" if index == 0 else "end" if index == axis.ticks else "middle"
        x = 0 if index == 0 else 100 if index == axis.ticks else at(axis, value)
        parts.append(f'<text x="{x:.2f}%" y="12" font-size="11" text-anchor="{anchor}" fill="#444">{100 * value:g}</text>')
    return "".join(parts) + "</svg>"


def marks_svg(row: ChartRow, axis: Axis) -> str:
    height = 12 * max(len(row.marks), 1) + 4
    parts = [f'<svg class="marks" height="{height}" role="img" aria-label="{esc(row.label)}: {esc(row.values)}">']
    for index in range(axis.ticks + 1):
        x = at(axis, axis.low + (axis.high - axis.low) * index / axis.ticks)
        parts.append(f'<line x1="{x:.2f}%" y1="0" x2="{x:.2f}%" y2="{height}" stroke="#eee"/>')
    if axis.reference is not None:
        x = at(axis, axis.reference)
        parts.append(f'<line x1="{x:.2f}%" y1="0" x2="{x:.2f}%" y2="{height}" stroke="#777" stroke-dasharray="3,2"/>')
    for index, mark in enumerate(row.marks):
        y = 8 + 12 * index
        if mark.value is None or not math.isfinite(mark.value):
            continue
        if mark.low is not None and mark.high is not None:
            x1, x2 = at(axis, mark.low), at(axis, mark.high)
            parts.append(f'<line x1="{x1:.2f}%" y1="{y}" x2="{x2:.2f}%" y2="{y}" stroke="{mark.colour}" stroke-width="2"/>')
        parts.append(marker(mark, at(axis, mark.value), y))
    return "".join(parts) + "</svg>"


def chart(rows: Sequence[ChartRow], axis: Axis, caption: str) -> list[str]:
    """Each row's label and values as text, its marks below on the shared axis (ticks above and below, the
    reference line dashed); legible at any width, as no text is drawn scaled."""
    lines = ['<figure class="chart">', f"<figcaption>{esc(caption)}</figcaption>", axis_svg(axis), '<ul class="chart">']
    for row in rows:
        strong = ' class="strong"' if row.strong else ""
        lines.append(
            f'<li{strong}><span class="label">{esc(row.label)}</span> <span class="values">{esc(row.values)}</span>'
            f"{marks_svg(row, axis)}</li>"
        )
    return lines + ["</ul>", axis_svg(axis), f'<p class="intro">{esc(axis.title)}</p>', "</figure>"]
