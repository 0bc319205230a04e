"""Python's cycle collector held off while a process starts: what its imports and first load make lives as long as it.

Importing torch and transformers and loading a model make about 220,000 objects, and the collector walked them as
they came: four full collections and some 580 younger ones, 0.33 s of CPU before `latencylab ask` had a 1B model
ready (measured with gc.callbacks), and a full walk again at exit. Held until the start is over, then frozen (gc.freeze: left out of
every later collection, the last one at exit among them), they cost nothing. The price: the start's garbage cycles
are frozen with them and never freed (7,583 objects after the 1B's load, and the process's RSS the same to the MiB
with or without collecting them first). Only a process that held it here is touched: a test's, or a window's GUI
thread that collects on its own (gui/gui_thread_gc.py), is left as it is.
"""

from __future__ import annotations

import gc

_held = False


def hold() -> None:
    """At the start of a program (the command line's entry point, the engine process): no collection until started()."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def started() -> None:
    """The start's objects are made (the model stack imported, the first model loaded): freeze them and collect
    again from here on. Does nothing where hold() did not hold the collector, or after the first call."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()
