"""The bench's table: per category and overall, ours beside Headroom's, then the aims."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass


@dataclass
class Row:
    category: str
    chars: int
    kb: float
    out: int
    ms: float
    tokens: int
    seen: int
    err_tokens: int
    err_seen: int
    unchanged: bool
    larger: bool
    round_trip_failed: bool
    crashed: bool
    nondeterministic: bool = False
    err_lines: int = 0
    err_lines_seen: int = 0
    err_lines_repeated: int = 0  # not verbatim, but a kept line has its shape
    hr_out: int = 0
    hr_ms: float = 0.0
    hr_seen: int = 0
    hr_err_seen: int = 0
    hr_unchanged: bool = True
    id: str = ""
    compressor: str = ""


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "    —"


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


@dataclass
class Totals:
    n: int
    chars: int
    removed: int
    unchanged: int
    ms_kb: list[float]
    tokens: int
    seen: int
    err_tokens: int
    err_seen: int
    hr_removed: int
    hr_unchanged: int
    hr_ms_kb: list[float]
    hr_seen: int
    hr_err_seen: int

    @classmethod
    def of(cls, rows: list[Row]) -> Totals:
        return cls(
            n=len(rows),
            chars=sum(r.chars for r in rows),
            removed=sum(r.chars - r.out for r in rows),
            unchanged=sum(r.unchanged for r in rows),
            ms_kb=[r.ms / r.kb for r in rows if r.kb],
            tokens=sum(r.tokens for r in rows),
            seen=sum(r.seen for r in rows),
            err_tokens=sum(r.err_tokens for r in rows),
            err_seen=sum(r.err_seen for r in rows),
            hr_removed=sum(r.chars - r.hr_out for r in rows),
            hr_unchanged=sum(r.hr_unchanged for r in rows),
            hr_ms_kb=[r.hr_ms / r.kb for r in rows if r.kb],
            hr_seen=sum(r.hr_seen for r in rows),
            hr_err_seen=sum(r.hr_err_seen for r in rows),
        )

    def cells(self, headroom: bool) -> str:
        ours = (
            f"{self.n:4d} {self.chars / 1000:8.0f}k {_pct(self.removed, self.chars)} "
            f"{self.unchanged:5d} {statistics.median(self.ms_kb):7.3f} {_p95(self.ms_kb):7.3f} "
            f"{_pct(self.seen, self.tokens)} {_pct(self.err_seen, self.err_tokens)}"
        )
        if not headroom:
            return ours
        return ours + (
            f" │ {_pct(self.hr_removed, self.chars)} {self.hr_unchanged:5d} "
            f"{statistics.median(self.hr_ms_kb):7.3f} {_pct(self.hr_seen, self.tokens)} "
            f"{_pct(self.hr_err_seen, self.err_tokens)}"
        )


HEAD = (
    f"{'category':<12} {'n':>4} {'chars':>9} {'removed':>6} {'unch':>5} "
    f"{'ms/KB50':>7} {'ms/KB95':>7} {'salient':>6} {'err-ln':>6}"
)
HR_HEAD = f" │ {'HR rm':>6} {'unch':>5} {'ms/KB50':>7} {'salient':>6} {'err-ln':>6}"


def print_report(rows: list[Row], headroom: bool, detail: bool) -> None:
    if detail:
        for r in sorted(rows, key=lambda r: (r.category, -r.chars)):
            hr = f" HR {_pct(r.chars - r.hr_out, r.chars)}" if headroom else ""
            print(
                f"{r.id:<24} {r.compressor:<12} {r.chars:8d} {_pct(r.chars - r.out, r.chars)} "
                f"sal {r.seen}/{r.tokens} err {r.err_seen}/{r.err_tokens}{hr}"
            )
        print()
    by_category: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_category[r.category].append(r)
    print(HEAD + (HR_HEAD if headroom else ""))
    for category in sorted(by_category):
        print(f"{category:<12} " + Totals.of(by_category[category]).cells(headroom))
    overall = Totals.of(rows)
    print(f"{'overall':<12} " + overall.cells(headroom))
    print()
    _print_checks(rows, overall, headroom)


def _print_checks(rows: list[Row], t: Totals, headroom: bool) -> None:
    def check(ok: bool, text: str) -> None:
        print(f"  {'✓' if ok else '✗'} {text}")

    removed = t.removed / t.chars
    seen = t.seen / t.tokens if t.tokens else 1.0
    err = t.err_seen / t.err_tokens if t.err_tokens else 1.0
    median = statistics.median(t.ms_kb)
    err_lines = sum(r.err_lines for r in rows)
    err_lines_seen = sum(r.err_lines_seen for r in rows)
    err_lines_repeated = sum(r.err_lines_repeated for r in rows)
    print("aims")
    check(removed >= 0.72, f"overall removed {100 * removed:.1f}% (aim ≥ 72%)")
    check(seen >= 0.90, f"salient tokens visible {100 * seen:.1f}% (aim ≥ 90%)")
    check(err >= 0.995, f"tokens on error/warning lines visible {100 * err:.2f}% (aim ≥ 99.5%)")
    if headroom:
        hr_median = statistics.median(t.hr_ms_kb)
        check(
            median <= hr_median / 2,
            f"median {median:.3f} ms/KB vs Headroom {hr_median:.3f} (aim ≤ half)",
        )
    else:
        print(f"  · median {median:.3f} ms/KB (Headroom not run)")
    for name, count in (
        ("non-deterministic outputs", sum(r.nondeterministic for r in rows)),
        ("round-trip failures", sum(r.round_trip_failed for r in rows)),
        ("outputs larger than their input", sum(r.larger for r in rows)),
        ("crashes", sum(r.crashed for r in rows)),
    ):
        check(count == 0, f"{count} {name}")
    print(
        f"  · error lines of compiler output and logs shown verbatim: "
        f"{err_lines_seen}/{err_lines}, {err_lines_repeated} more folded as repeats of a kept"
        f" line's shape, {err_lines - err_lines_seen - err_lines_repeated} neither"
    )


def print_side_by_side(results: dict[str, list[Row]], headroom: bool) -> None:
    """The aims and headline figures of each corpus in one table, a column per corpus."""
    names = list(results)
    totals = {name: Totals.of(rows) for name, rows in results.items()}

    def ratio(part: int, whole: int) -> float:
        return part / whole if whole else 1.0

    lines: list[tuple[str, list[str], bool | None]] = []

    def row(label: str, cells: list[str], ok: bool | None = None) -> None:
        lines.append((label, cells, ok))

    def every(test: list[bool]) -> bool:
        return all(test)

    removed = [ratio(t.removed, t.chars) for t in totals.values()]
    seen = [ratio(t.seen, t.tokens) for t in totals.values()]
    err = [ratio(t.err_seen, t.err_tokens) for t in totals.values()]
    row("samples", [str(t.n) for t in totals.values()])
    row(
        "removed (aim ≥ 72%)",
        [f"{100 * r:.1f}%" for r in removed],
        every([r >= 0.72 for r in removed]),
    )
    if headroom:
        row("  Headroom removed", [_pct(t.hr_removed, t.chars).strip() for t in totals.values()])
    row(
        "salient visible (aim ≥ 90%)",
        [f"{100 * r:.1f}%" for r in seen],
        every([r >= 0.90 for r in seen]),
    )
    if headroom:
        row("  Headroom", [_pct(t.hr_seen, t.tokens).strip() for t in totals.values()])
    row(
        "error-line tokens (aim ≥ 99.5%)",
        [f"{100 * r:.2f}%" for r in err],
        every([r >= 0.995 for r in err]),
    )
    if headroom:
        row("  Headroom", [_pct(t.hr_err_seen, t.err_tokens).strip() for t in totals.values()])
    row("median ms/KB", [f"{statistics.median(t.ms_kb):.3f}" for t in totals.values()])
    if headroom:
        row("  Headroom", [f"{statistics.median(t.hr_ms_kb):.3f}" for t in totals.values()])
    for label, attr in (
        ("non-deterministic", "nondeterministic"),
        ("round-trip failures", "round_trip_failed"),
        ("larger than input", "larger"),
        ("crashes", "crashed"),
    ):
        counts = [sum(getattr(r, attr) for r in rows) for rows in results.values()]
        row(label, [str(c) for c in counts], every([c == 0 for c in counts]))
    width = max(len(label) for label, _, _ in lines) + 2
    print("side by side".ljust(width) + "".join(f"{name:>10}" for name in names))
    for label, cells, ok in lines:
        mark = "" if ok is None else ("  ✓" if ok else "  ✗")
        print(label.ljust(width) + "".join(f"{c:>10}" for c in cells) + mark)
