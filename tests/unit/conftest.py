# SPDX-License-Identifier: GPL-3.0-or-later
"""Hypothesis without its per-example deadline (200 ms by default): a deadline is a timed test, and
`make test` runs the unit tests beside lint, sanity and the molecule scenarios on two cores, where an
example's wall time says nothing about the code. Speed targets are measured by `make bench-perf`."""

from hypothesis import settings

settings.register_profile("xdplab", deadline=None)
settings.load_profile("xdplab")
