"""What overlaps in a matplotlib figure as drawn: the extents of its texts, markers, error bars and legend,
measured with the figure's own renderer (in display pixels), so a label that covers a mark fails a test.

    problems = overlaps(fig)   # ["text '34.1' overlaps the marker of 'chance'", ...]
"""

from __future__ import annotations

import math

from matplotlib.collections import LineCollection, PathCollection
from matplotlib.markers import MarkerStyle
from matplotlib.text import Text
from matplotlib.transforms import Bbox


def marker_box(x: float, y: float, unit_path, size_px: float, edge_px: float) -> Bbox:
    """The drawn extent of a marker at (x, y) in pixels: its path's extents (a `|` is tall and thin, a `D` wide),
    scaled to its size and padded by half its edge line."""
    extents = unit_path.get_extents()
    box = Bbox.from_extents(
        x + extents.x0 * size_px, y + extents.y0 * size_px, x + extents.x1 * size_px, y + extents.y1 * size_px
    )
    return box.padded(edge_px / 2)


def mark_boxes(ax, renderer) -> list[tuple[str, Bbox]]:
    """Scatter markers (one box per point, sized from `s`), error-bar lines and their caps, in display pixels."""
    pixels = renderer.points_to_pixels(1.0)
    marks = []
    for collection in ax.collections:
        if isinstance(collection, PathCollection):
            sizes, paths = collection.get_sizes(), collection.get_paths()
            edge = (collection.get_linewidths() or [1.0])[0] * pixels
            centres = collection.get_offset_transform().transform(collection.get_offsets())
            for i, (x, y) in enumerate(centres):
                side = math.sqrt(sizes[i % len(sizes)]) * pixels
                marks.append((f"the marker of {collection.get_label()!r}", marker_box(x, y, paths[i % len(paths)], side, edge)))
        elif isinstance(collection, LineCollection):  # error bars
            marks += [
                ("an error bar", Bbox(ax.transData.transform(segment)).padded(0.5)) for segment in collection.get_segments()
            ]
    for line in ax.lines:  # error-bar caps and marked lines
        if line.get_marker() in (None, "None", "", " "):
            continue
        style = MarkerStyle(line.get_marker())
        unit = style.get_path().transformed(style.get_transform())
        size, edge = line.get_markersize() * pixels, line.get_markeredgewidth() * pixels
        marks += [
            ("a line's marker", marker_box(x, y, unit, size, edge)) for x, y in line.get_transform().transform(line.get_xydata())
        ]
    return marks


def overlaps(fig) -> list[str]:
    """Texts that overlap each other or cover a mark (marker, error bar, cap), and a legend over a bar, mark or text."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    in_legend = {id(text) for legend in legends for text in legend.get_texts()}
    texts = [
        (text.get_text(), text.get_window_extent(renderer))
        for text in fig.findobj(Text)
        if text.get_visible() and text.get_text().strip() and id(text) not in in_legend
    ]
    marks = [mark for ax in fig.axes for mark in mark_boxes(ax, renderer)]
    found = []
    for index, (text, box) in enumerate(texts):
        found += [f"text {text!r} overlaps text {other!r}" for other, other_box in texts[index + 1 :] if box.overlaps(other_box)]
        found += [f"text {text!r} overlaps {what}" for what, mark in marks if box.overlaps(mark)]
    for legend in legends:
        frame = legend.get_window_extent(renderer)
        bars = [patch.get_window_extent(renderer) for ax in fig.axes for patch in ax.patches]
        found += ["the legend covers a bar" for bar in bars if frame.overlaps(bar)]
        found += [f"the legend covers {what}" for what, mark in marks if frame.overlaps(mark)]
        found += [f"the legend covers text {text!r}" for text, box in texts if frame.overlaps(box)]
    return found
