"""The roofline: FLOP/s against FLOPs per byte, log-log, under this machine's compute and bandwidth ceilings.

Prefill sits far right (hundreds of FLOPs per byte: every weight read once for the whole prompt) under the
GEMM ceiling; decode sits far left (a few FLOPs per byte) under the slope of the memory it reads. The batch
sweep's points climb that slope toward the ridge: as long as they stay on it, a bigger batch is free.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt

from core.lab.results import LAB_DEFINITIONS
from core.roofline.ceilings import CEILING_NAMES, Ceilings, format_rate
from core.roofline.counts import ArithmeticShape
from core.roofline.placement import weights_fit_in_cache
from gui.plotting.empty_note import RUN_A_SWEEP, EmptyPlotNote
from gui.plotting.page_plot import PagePlot
from gui.plotting.plot_style import style_plot

PREFILL_COLOR = "#e8710a"
DECODE_COLOR = "#188038"
BATCH_COLOR = "#1a73e8"
PRECISION_COLOR = "#9334e6"
COMPUTE_COLOR = "#d93025"
MEMORY_COLOR = {"dram": "#5f6368", "llc": "#b06000"}
# Text labels made once and reused: one a GEMM ceiling, the batch's two ends, a precision each (five at most).
LABEL_SLOTS = len(CEILING_NAMES) + 2 + 5
MEMORY_CEILINGS = 2  # DRAM and the last-level cache: each slope's label runs along it
CLOSE_DECADES = 0.35  # two GEMM ceilings nearer than this have no room for a label between their lines
GIGA = 1e9
# A label over a measured point slides along its line by this much, at most SLIDES times, to a place that shows both.
SLIDE_DECADES = 0.2
SLIDES = 10
POINT_PX = 6  # a point's marker reaches this far from its centre


class RooflinePlot(PagePlot):
    def __init__(self, parent=None):
        super().__init__(parent)
        style_plot(
            self,
            title="Roofline: prefill and decode vs. this CPU",
            bottom="FLOPs per byte moved (log scale)",
            left="GFLOP/s (log scale)",
            log_x=True,
            log_y=True,
            tooltip="Red: GEMM ceilings (FLOP/s). Grey and brown slopes: DRAM and last-level cache "
            "bandwidth (bytes/s x FLOPs per byte).\nOrange squares: each prompt's prefill ("
            + LAB_DEFINITIONS["prefill_flops_per_s"]
            + ")\nGreen circles: its decode ("
            + LAB_DEFINITIONS["decode_flops_per_s"]
            + ")\nBlue: the batch sweep, one step of the whole "
            "batch. Purple: each precision's decode.\n" + LAB_DEFINITIONS["decode_bytes"],
        )
        self.ceiling_items: list[pg.PlotDataItem] = []
        self.prefill_item = self.plot(
            [], [], pen=None, symbol="s", symbolSize=9, symbolBrush=PREFILL_COLOR, symbolPen=None, name="prefill"
        )
        self.decode_item = self.plot(
            [], [], pen=None, symbol="o", symbolSize=9, symbolBrush=DECODE_COLOR, symbolPen=None, name="decode"
        )
        self.batch_item = self.plot(
            [], [], pen=pg.mkPen(BATCH_COLOR, width=2), symbol="t", symbolSize=8, symbolBrush=BATCH_COLOR, name="batch"
        )
        self.precision_item = self.plot(
            [], [], pen=None, symbol="d", symbolSize=10, symbolBrush=PRECISION_COLOR, symbolPen=None, name="precision"
        )
        for _ in CEILING_NAMES:  # a line for every ceiling the machine can have measured
            item = self.plot([], [])
            self.ceiling_items.append(item)
        self.labels = []
        for _ in range(LABEL_SLOTS):
            label = pg.TextItem("", color="#333", anchor=(0, 1))
            label.setVisible(False)
            self.addItem(label)
            self.labels.append(label)
        # Turned to the slope of 1 that a bandwidth has on log-log axes, whatever the plot's shape, and set just
        # above its line: the decode and batch points sit on or under these lines, the GEMM ceilings to the right.
        self.slope_labels = []
        for _ in range(MEMORY_CEILINGS):
            label = pg.TextItem("", anchor=(0, 1), rotateAxis=(1, 1))
            label.setVisible(False)
            self.addItem(label)
            self.slope_labels.append(label)
        for side in ("left", "bottom"):
            self.getAxis(side).enableAutoSIPrefix(False)  # a log axis in powers of ten, not "x1e+12"
        self.empty_note = EmptyPlotNote(self, RUN_A_SWEEP)
        self.reset()

    def reset(self) -> None:
        self._prefill: list[tuple[float, float]] = []
        self._decode: list[tuple[float, float]] = []
        self._batch: list[tuple[float, float, int]] = []
        self._precision: list[tuple[float, float, str]] = []
        self._ceilings: Ceilings | None = None
        self._weights_fit = False

    def set_ceilings(self, ceilings: dict | None, arithmetic: dict | None = None) -> None:
        """The machine's ceilings, and the model's shape: where its weights fit in the last-level cache, that
        ceiling is the one decode meets, and its label says so."""
        self._ceilings = Ceilings.from_dict(ceilings) if ceilings else None
        self._weights_fit = bool(
            arithmetic
            and self._ceilings
            and weights_fit_in_cache(ArithmeticShape.from_dict(arithmetic), self._ceilings)
        )

    # Points in GFLOP/s, as the y axis reads; a phase whose rate or intensity was not measured (null) is left out.
    def add_prompt_row(self, row: dict) -> None:
        if row.get("prefill_flops_per_s") and row.get("prefill_intensity"):
            self._prefill.append((row["prefill_intensity"], row["prefill_flops_per_s"] / GIGA))
        if row.get("decode_flops_per_s") and row.get("decode_intensity"):
            self._decode.append((row["decode_intensity"], row["decode_flops_per_s"] / GIGA))

    def add_batch_row(self, row: dict) -> None:
        if row.get("decode_flops_per_s") and row.get("decode_intensity"):
            self._batch.append((row["decode_intensity"], row["decode_flops_per_s"] / GIGA, row["batch_size"]))

    def add_precision_row(self, row: dict) -> None:
        if row.get("decode_flops_per_s") and row.get("decode_intensity"):
            self._precision.append((row["decode_intensity"], row["decode_flops_per_s"] / GIGA, row["dtype"]))

    def points(self) -> list[tuple[float, float]]:
        return (
            [(x, y) for x, y in self._prefill + self._decode]
            + [(x, y) for x, y, _ in self._batch]
            + [(x, y) for x, y, _ in self._precision]
        )

    def refresh(self) -> None:
        points = self.points()
        self.empty_note.show_when(not points)
        self.prefill_item.setData(*_columns(self._prefill))
        self.decode_item.setData(*_columns(self._decode))
        batch = sorted(self._batch, key=lambda point: point[2])
        self.batch_item.setData(*_columns([(x, y) for x, y, _ in batch]))
        self.precision_item.setData(*_columns([(x, y) for x, y, _ in self._precision]))
        texts: list[tuple[float, float, str, str, tuple[float, float]]] = []
        if batch:
            texts.append((batch[0][0], batch[0][1], f"batch {batch[0][2]}", BATCH_COLOR, (1, 0)))
            if len(batch) > 1:
                texts.append((batch[-1][0], batch[-1][1], f"batch {batch[-1][2]}", BATCH_COLOR, (0, 1)))
        texts += [(x, y, f" {name}", PRECISION_COLOR, (0, 1)) for x, y, name in self._precision]
        x_range, y_range = self._ranges(points)
        if points:  # first: where a label lands on the screen, and so what it covers, depends on the range
            self.setRange(xRange=[math.log10(v) for v in x_range], yRange=[math.log10(v) for v in y_range], padding=0)
        texts += self._draw_ceilings(x_range, y_range)
        for index, label in enumerate(self.labels):
            if index < len(texts):
                x, y, text, color, anchor = texts[index]
                label.setText(text)
                label.setColor(color)
                label.setAnchor(anchor)
                label.setPos(math.log10(x), math.log10(y))
                label.setVisible(True)
            else:
                label.setVisible(False)
        ceiling_labels = [label for label, text in zip(self.labels, texts) if text[3] == COMPUTE_COLOR]
        self._clear_of_points(points, [(label, (-SLIDE_DECADES, 0.0)) for label in ceiling_labels])
        self._clear_of_points(points, [(label, (SLIDE_DECADES, SLIDE_DECADES)) for label in self.slope_labels])

    def _clear_of_points(self, points: list[tuple[float, float]], labels: list) -> None:
        """Slide each label along its line (a step in log units each time) until it covers no measured point; one that
        finds no clear place within SLIDES steps stays where it was put."""
        view = self.getViewBox()
        view.updateMatrix()
        spots = [view.mapViewToScene(QPointF(math.log10(x), math.log10(y))) for x, y in points]
        for label, (step_x, step_y) in labels:
            if not label.isVisible():
                continue
            first = label.pos()
            for slide in range(SLIDES + 1):
                label.setPos(first.x() + slide * step_x, first.y() + slide * step_y)
                label.updateTransform(force=True)
                covered = label.sceneBoundingRect().adjusted(-POINT_PX, -POINT_PX, POINT_PX, POINT_PX)
                if not any(covered.contains(spot) for spot in spots):
                    break
            else:
                label.setPos(first)

    def _ranges(self, points: list[tuple[float, float]]) -> tuple[tuple[float, float], tuple[float, float]]:
        xs = [x for x, _ in points] or [1.0]
        ys = [y for _, y in points] or [1.0]
        if self._ceilings:
            compute = [c.value / GIGA for c in self._ceilings.ceilings.values() if c.is_compute]
            memory = [c.value / GIGA for c in self._ceilings.ceilings.values() if not c.is_compute]
            ys += compute
            if compute and memory:
                xs += [max(compute) / min(memory)]  # the ridge of the lowest slope
        return (min(xs) / 4, max(xs) * 4), (min(ys) / 4, max(ys) * 4)

    def _draw_ceilings(self, x_range, y_range) -> list[tuple[float, float, str, str, tuple[int, int]]]:
        """The roof: bandwidth slopes up to the highest GEMM ceiling, GEMM ceilings from their ridge on. Labels the
        slopes itself; returns the GEMM ceilings' labels."""
        for item in self.ceiling_items:
            item.setData([], [])
        if not self._ceilings:
            for label in self.slope_labels:
                label.setVisible(False)
            return []
        compute = sorted((c for c in self._ceilings.ceilings.values() if c.is_compute), key=lambda c: c.value)
        memory = sorted((c for c in self._ceilings.ceilings.values() if not c.is_compute), key=lambda c: c.value)
        top = compute[-1].value / GIGA if compute else y_range[1]
        for label in self.slope_labels:
            label.setVisible(False)
        for index, (item, label, ceiling) in enumerate(zip(self.ceiling_items, self.slope_labels, memory)):
            slope = ceiling.value / GIGA
            xs = np.geomspace(x_range[0], top / slope, 8)
            color = MEMORY_COLOR.get(ceiling.name, "#5f6368")
            item.setData(xs, xs * slope, pen=pg.mkPen(color, width=2, style=Qt.PenStyle.DashLine))
            text = f"{ceiling.label} {format_rate(ceiling.value, 'byte/s')}"
            if ceiling.name == "llc" and self._weights_fit:
                text += ": holds the weights"
            label.setText(text)
            label.setColor(color)
            # The slowest slope's label under its line, a faster one's over it: the two lines run too close
            # together for a label between them.
            start = x_range[0] * 1.5
            under = index == 0 and len(memory) > 1
            label.setAnchor((0, 0) if under else (0, 1))
            label.setPos(math.log10(start), math.log10(start * slope * (1 / 1.1 if under else 1.1)))
            label.setVisible(True)
        slowest = memory[0].value / GIGA if memory else None
        texts = []
        levels = [ceiling.value / GIGA for ceiling in compute]
        for index, (item, ceiling) in enumerate(zip(self.ceiling_items[len(memory) :], compute)):
            level = levels[index]
            start = level / slowest if slowest else x_range[0]
            item.setData([start, x_range[1]], [level, level], pen=pg.mkPen(COMPUTE_COLOR, width=2))
            # A label over its line, unless the next ceiling up is too close for one between them (bfloat16's and
            # int8's GEMM can be a fifth of a decade apart): then under it, and the next one's over its own.
            above = index + 1 == len(levels) or math.log10(levels[index + 1] / level) >= CLOSE_DECADES
            texts.append(
                (
                    x_range[1] / 1.2,
                    level * 1.1 if above else level / 1.1,
                    f"{ceiling.label} {format_rate(ceiling.value, 'flop/s')}",
                    COMPUTE_COLOR,
                    (1, 1) if above else (1, 0),
                )
            )
        return texts


def _columns(points) -> tuple[np.ndarray, np.ndarray]:
    if not points:
        return np.array([]), np.array([])
    xs, ys = zip(*[(x, y) for x, y, *_ in points])
    return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
