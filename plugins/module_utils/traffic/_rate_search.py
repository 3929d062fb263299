# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the xdplab.testbed collection: not a public API, may change without notice.
"""NDR / PDR search planner: the offered rates to try, from the trials' results (pure logic).

RFC 2544's throughput test as a binary search: the highest offered rate at which the DUT's loss
ratio is at most ``loss_ratio`` (0: NDR, the no-drop rate; e.g. 0.005: a PDR, partial-drop rate).
The first trial is at ``max_rate`` (the generator's maximum: a DUT that loses nothing there is
generator-bound, and the search ends). Then the interval [highest pass, lowest fail] is halved until
its width is at most ``resolution`` times its upper end. The highest pass is then tried
``final_repetitions`` more times: all must pass, or that rate counts as a fail and the search goes on
below it (a rate that passed once by luck is not the result). Every trial is kept, in order, as the
search's trail for the record.

    search = RateSearch(max_rate=1e6, loss_ratio=0.0)
    while (rate := search.next_rate()) is not None:
        sent, received = run_trial(rate)       # the caller's measurement at that offered rate
        search.record(rate, sent, received)
    search.result()   # {"rate", "loss_ratio", "trials", "final", "trail", "bound", ...}

bench_run's ``search`` option drives it (search_from_spec, trial_counts): one trial is one generator
run at the offered rate with the DUT counter read before and after.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ansible_collections.xdplab.testbed.plugins.module_utils.traffic._generator_table import RATE_SHORTFALL

__all__ = ["SEARCH_METHOD", "RateSearch", "SearchError", "Trial", "search_from_spec", "trial_counts"]


class SearchError(ValueError):
    """A bad search parameter or trial result, named."""


@dataclass(frozen=True)
class Trial:
    rate: float            # offered rate asked for, packets/s
    sent: int              # packets the generator sent
    received: int          # packets the DUT counted (forwarded or dropped by the program under test)
    loss_ratio: float      # (sent - received) / sent, never below 0
    passed: bool
    phase: str             # "search" or "final"


def _positive(name: str, value: object, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SearchError(f"{name} must be a number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise SearchError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return float(value)


class RateSearch:
    """Binary search of the highest rate with loss ratio <= loss_ratio, with final repetitions."""

    def __init__(self, max_rate: float, *, loss_ratio: float = 0.0, min_rate: float | None = None,
                 resolution: float = 0.01, final_repetitions: int = 3, max_trials: int = 40) -> None:
        self.max_rate = _positive("max_rate", max_rate)
        self.loss_ratio = _positive("loss_ratio", loss_ratio, allow_zero=True)
        if self.loss_ratio >= 1:
            raise SearchError(f"loss_ratio must be below 1, got {loss_ratio!r}")
        self.min_rate = _positive("min_rate", min_rate if min_rate is not None else max_rate / 1000)
        if self.min_rate >= self.max_rate:
            raise SearchError(f"min_rate {min_rate!r} must be below max_rate {max_rate!r}")
        self.resolution = _positive("resolution", resolution)
        if self.resolution >= 1:
            raise SearchError(f"resolution must be a fraction below 1, got {resolution!r}")
        if isinstance(final_repetitions, bool) or not isinstance(final_repetitions, int) or final_repetitions < 0:
            raise SearchError(f"final_repetitions must be an integer >= 0, got {final_repetitions!r}")
        if isinstance(max_trials, bool) or not isinstance(max_trials, int) or max_trials < 1:
            raise SearchError(f"max_trials must be an integer >= 1, got {max_trials!r}")
        self.final_repetitions = final_repetitions
        self.max_trials = max_trials
        self.trials: list[Trial] = []
        self._fails: list[float] = []   # rates that failed (or whose final repetitions failed)
        self._final_rate: float | None = None
        self._final_left = 0
        self._pending: tuple[float, str] | None = None

    # ---- state --------------------------------------------------------------------------------
    def _lo(self) -> float | None:
        """The highest rate that passed below the lowest fail."""
        hi = self._hi()
        passes = [t.rate for t in self.trials if t.passed and t.rate < hi]
        return max(passes) if passes else None

    def _hi(self) -> float:
        return min(self._fails) if self._fails else math.inf

    def _narrow(self, lo: float, hi: float) -> bool:
        return hi - lo <= self.resolution * hi

    # ---- the plan -----------------------------------------------------------------------------
    def next_rate(self) -> float | None:
        """The offered rate of the next trial, or None when the search is over."""
        if self._pending is not None:
            return self._pending[0]
        if len(self.trials) >= self.max_trials:
            return None
        if not self.trials:
            return self._plan(self.max_rate, "search")
        hi, lo = self._hi(), self._lo()
        if hi == math.inf:          # max_rate passed: generator-bound, nothing above to find
            return self._confirm(self.max_rate)
        if lo is None:              # nothing passed yet below the lowest fail: halve, down to min_rate
            below = hi / 2
            if below < self.min_rate:
                if self.min_rate in self._fails:
                    return None     # the DUT loses too much even at min_rate
                below = self.min_rate
            return self._plan(below, "search")
        if not self._narrow(lo, hi):
            return self._plan((lo + hi) / 2, "search")
        return self._confirm(lo)

    def _plan(self, rate: float, phase: str) -> float:
        self._pending = (rate, phase)
        return rate

    def _confirm(self, rate: float) -> float | None:
        if self._final_rate != rate:
            self._final_rate, self._final_left = rate, self.final_repetitions
        if self._final_left <= 0:
            return None
        return self._plan(rate, "final")

    @property
    def next_phase(self) -> str | None:
        """"search" or "final" for the trial next_rate() asked for, None when none is pending."""
        return self._pending[1] if self._pending else None

    def record(self, rate: float, sent: int, received: int) -> Trial:
        """The result of the trial at `rate` (the one next_rate() asked for)."""
        if self._pending is None or rate != self._pending[0]:
            want = None if self._pending is None else self._pending[0]
            raise SearchError(f"trial at rate {rate!r}: the search asked for {want!r}")
        for name, value in (("sent", sent), ("received", received)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise SearchError(f"{name} must be an integer >= 0, got {value!r}")
        if sent == 0:
            raise SearchError(f"trial at rate {rate!r} sent no packets: no loss ratio to judge")
        loss = max(0.0, (sent - received) / sent)
        phase = self._pending[1]
        trial = Trial(rate=rate, sent=sent, received=received, loss_ratio=loss,
                      passed=loss <= self.loss_ratio, phase=phase)
        self.trials.append(trial)
        self._pending = None
        if not trial.passed:
            self._fails.append(rate)
            self._final_rate, self._final_left = None, 0
        elif phase == "final":
            self._final_left -= 1
        return trial

    # ---- the outcome --------------------------------------------------------------------------
    def done(self) -> bool:
        return self.next_rate() is None

    def result(self) -> dict:
        """The rate found (None if nothing passed), how it was found, and the whole trail."""
        lo, hi = self._lo(), self._hi()
        final = [t for t in self.trials if t.phase == "final" and lo is not None and t.rate == lo]
        confirmed = lo is not None and len([t for t in final if t.passed]) >= self.final_repetitions
        return {
            "rate": lo, "loss_ratio": self.loss_ratio, "kind": "NDR" if self.loss_ratio == 0 else "PDR",
            "upper": None if hi == math.inf else hi,
            "bound": "generator" if lo == self.max_rate else "dut",
            "confirmed": confirmed, "complete": self.done() and (confirmed or len(self.trials) < self.max_trials),
            "resolution": self.resolution, "final_repetitions": self.final_repetitions,
            "trials": len(self.trials), "trail": [asdict(t) for t in self.trials],
        }


# The method's name, as the record and the docs give it.
SEARCH_METHOD = "binary (RFC 2544 throughput), final repetitions at the rate found"

# bench_run's `search` option: key -> RateSearch keyword (max_rate is positional).
SPEC_KEYS = ("max_rate", "loss_ratio", "min_rate", "resolution", "final_repetitions", "max_trials")


def search_from_spec(spec: dict) -> RateSearch:
    """The RateSearch bench_run's `search` option asks for; a missing max_rate or an unknown key is
    named (the other values are checked by RateSearch)."""
    if not isinstance(spec, dict):
        raise SearchError(f"search must be a dict of {', '.join(SPEC_KEYS)}, got {spec!r}")
    unknown = sorted(set(spec) - set(SPEC_KEYS))
    if unknown:
        raise SearchError(f"search: unknown key(s) {', '.join(unknown)}; known: {', '.join(SPEC_KEYS)}")
    if not spec.get("max_rate"):
        raise SearchError(f"search needs max_rate > 0, the generator's maximum in packets/s (the bench role's "
                          f"bench_calibrate or bench_generator_max gives it), got {spec.get('max_rate')!r}")
    kw = {k: spec[k] for k in SPEC_KEYS[1:] if spec.get(k) is not None}
    for k in ("final_repetitions", "max_trials"):  # whole numbers given as 3.0 by a template
        if isinstance(kw.get(k), float) and kw[k].is_integer():
            kw[k] = int(kw[k])
    return RateSearch(spec["max_rate"], **kw)


def trial_counts(rate: float, gen_packets: int, gen_seconds: float, dut_packets: int) -> tuple[int, int]:
    """(offered, received) of one trial, for RateSearch.record.

    A generator that sent at least RATE_SHORTFALL (99%) of rate x its seconds offered what it sent
    (a paced sender ends up to one pacing slice short of rate x seconds: not the DUT's doing). Below
    that, the offered load is rate x seconds (RFC 2544's frames offered): a DUT that pushes back (a
    full veth or NIC queue refuses the transmit, and the generator sends again) loses against the
    load it was offered even when no frame is dropped, so such a trial fails as a drop would. The
    DUT's count is the received side."""
    for name, value in (("gen_packets", gen_packets), ("dut_packets", dut_packets)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SearchError(f"{name} must be an integer >= 0, got {value!r}")
    if not gen_seconds or gen_seconds <= 0:
        raise SearchError(f"trial at rate {rate!r}: generator seconds must be > 0, got {gen_seconds!r}")
    asked = round(rate * gen_seconds)
    return (gen_packets if gen_packets >= RATE_SHORTFALL * asked else asked), dut_packets
