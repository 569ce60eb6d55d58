"""The replays of `slurmlet simulate --sacct ... --html FILE` as one self-contained HTML page.

`page(results)` returns the page as a string: the replays' summaries, the per-group table of
`report` (all jobs, each partition, account and user; one column per replay under each figure),
and three plots drawn here as inline SVG: queue length over time, waits by job size and
utilization over time. The page loads nothing (inline CSS, no script; its Content-Security-Policy
forbids both), so it opens from a file, offline, and can be mailed as it is.

Every name that comes from the history (partition, account, user) or the command line (paths,
labels) goes through `html.escape`: a dump is input, and a user name such as `<script>` is text.

The time series come from the jobs' arrival, start and end times (`SimResult.jobs`, `start`,
`end`): the queue holds a job from its arrival to its start, the machine's busy CPUs count it
from its start to its end. Series with more changes than the plot has room for are drawn as
time-weighted means over `BINS` equal intervals. A job preempted and requeued is drawn with its
last run (its preemptions are counted in the table).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from html import escape

from .engine import SimResult
from .report import ROWS, percentile, table

BINS = 600  #: at most this many steps per time series; more changes are averaged per interval
COLOURS = ("#1f77b4", "#d95f02", "#1b9e77", "#7570b3")  #: replay A, B, ... (cycled)
LOWER_IS_BETTER = ("mean_wait_s", "p50_wait_s", "p95_wait_s", "mean_bounded_slowdown")
W, H = 760, 260  #: plot size (px)
ML, MR, MT, MB = 64, 16, 16, 40  #: plot margins (px): left, right, top, bottom

Points = list[tuple[float, float]]


def steps(deltas: Iterable[tuple[float, float]]) -> Points:
    """The running sum of (time, change) as change points (time, value from then on), one per time."""
    out: Points = []
    v = 0.0
    for t, d in sorted(deltas):
        v += d
        if out and out[-1][0] == t:
            out[-1] = (t, v)
        else:
            out.append((t, v))
    return out


def queue_length(res: SimResult) -> Points:
    """Pending jobs over time: each from its arrival to its start."""
    return steps(d for j, s in zip(res.jobs, res.start) if math.isfinite(s)
                 for d in ((float(j.submit), 1.0), (s, -1.0)))


def utilization(res: SimResult) -> Points:
    """Busy CPUs / the machine's CPUs over time: each job's CPUs from its start to its end."""
    share = 1.0 / res.max_procs
    return steps(d for j, s, e in zip(res.jobs, res.start, res.end) if math.isfinite(s) and math.isfinite(e)
                 for d in ((s, j.procs * share), (e, -j.procs * share)))


def binned(points: Points, t_end: float, bins: int = BINS) -> Points:
    """The step function `points` (0 before the first) as its time-weighted mean over `bins` equal
    intervals of [0, t_end], as change points."""
    if t_end <= 0 or bins <= 0:
        return list(points)
    w = t_end / bins
    edges = [k * w for k in range(1, bins)] + [t_end]
    means = [0.0] * bins
    area = done = last = v = 0.0  # area under the function up to `last`, and up to the last edge passed
    k = 0
    for t, nv in (*points, (t_end, 0.0)):
        t = min(max(t, 0.0), t_end)
        while k < bins and edges[k] <= t:
            upto = area + v * (edges[k] - last)
            means[k] = (upto - done) / w
            done = upto
            k += 1
        area += v * (t - last)
        last, v = t, nv
    return [(i * w, m) for i, m in enumerate(means)]


def size_buckets(max_size: int) -> list[tuple[int, int]]:
    """CPU ranges 1, 2, 3-4, 5-8, ... up to one that holds `max_size`."""
    out = [(1, 1)]
    while out[-1][1] < max_size:
        lo = out[-1][1] + 1
        out.append((lo, 2 * out[-1][1]))
    return out


def _nice(hi: float, n: int = 4) -> tuple[float, list[float]]:
    """(axis top, ticks) for values in [0, hi]: steps of 1, 2 or 5 times a power of ten."""
    if hi <= 0 or not math.isfinite(hi):
        return 1.0, [0.0, 1.0]
    raw = hi / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    top = math.ceil(hi / step - 1e-9) * step
    return top, [k * step for k in range(round(top / step) + 1)]


def _time_unit(span: float) -> tuple[str, float]:
    for name, secs, below in (("s", 1, 600), ("min", 60, 10 * 3600), ("h", 3600, 5 * 86400)):
        if span < below:
            return name, secs
    return "d", 86400


def _tick(v: float) -> str:
    return f"{v:g}" if abs(v) < 1e6 else f"{v:.3g}"


def _duration(s: float) -> str:
    d, rest = divmod(int(round(s)), 86400)
    h, rest = divmod(rest, 3600)
    m, sec = divmod(rest, 60)
    return f"{d}-{h:02d}:{m:02d}:{sec:02d}" if d else f"{h:02d}:{m:02d}:{sec:02d}"


def _colour(k: int) -> str:
    return COLOURS[k % len(COLOURS)]


def _frame(title: str, x_label: str, y_label: str, x_ticks: Sequence[tuple[float, str]],
           y_ticks: Sequence[tuple[float, str]], body: str, legend: Sequence[str], plot_id: str) -> str:
    """An SVG plot: axes, ticks, grid, labels and legend around `body` (already in pixels)."""
    x1, y1 = W - MR, H - MB
    out = [f'<figure><figcaption>{escape(title)}</figcaption>'
           f'<svg id="{escape(plot_id)}" class="plot" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           f'role="img" aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">']
    for y, text in y_ticks:
        out.append(f'<line class="grid" x1="{ML}" x2="{x1}" y1="{y:.1f}" y2="{y:.1f}"/>'
                   f'<text class="tick" x="{ML - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(text)}</text>')
    for x, text in x_ticks:
        out.append(f'<line class="axis" x1="{x:.1f}" x2="{x:.1f}" y1="{y1}" y2="{y1 + 4}"/>'
                   f'<text class="tick" x="{x:.1f}" y="{y1 + 16}" text-anchor="middle">{escape(text)}</text>')
    out.append(f'<line class="axis" x1="{ML}" x2="{x1}" y1="{y1}" y2="{y1}"/>'
               f'<line class="axis" x1="{ML}" x2="{ML}" y1="{MT}" y2="{y1}"/>')
    out.append(f'<text class="label" x="{(ML + x1) / 2:.0f}" y="{H - 6}" text-anchor="middle">{escape(x_label)}</text>'
               f'<text class="label" transform="translate(14 {(MT + y1) / 2:.0f}) rotate(-90)" '
               f'text-anchor="middle">{escape(y_label)}</text>')
    out.append(body)
    for k, name in enumerate(legend):
        x = x1 - 90 * (len(legend) - k)
        out.append(f'<rect x="{x}" y="{MT}" width="12" height="12" fill="{_colour(k)}"/>'
                   f'<text class="tick" x="{x + 16}" y="{MT + 10}">{escape(name)}</text>')
    out.append("</svg></figure>")
    return "".join(out)


def _over_time(title: str, y_label: str, series: dict[str, Points], t_end: float, plot_id: str,
               y_floor: float = 0.0) -> str:
    """Step lines of `series` (label -> change points) over [0, t_end] seconds."""
    t_end = t_end if t_end > 0 else 1.0
    drawn = {lb: pts if len(pts) <= BINS else binned(pts, t_end) for lb, pts in series.items()}
    hi = max([y_floor, *(v for pts in drawn.values() for _, v in pts)])
    top, yt = _nice(hi)
    unit, secs = _time_unit(t_end)
    xtop, xt = _nice(t_end / secs, 6)
    xs = (W - ML - MR) / (xtop * secs)
    ys = (H - MT - MB) / top

    def px(t: float) -> float:
        return ML + t * xs

    def py(v: float) -> float:
        return H - MB - v * ys

    body = []
    for k, (label, pts) in enumerate(drawn.items()):
        d = [f"M{px(0):.1f},{py(0):.1f}"]
        for t, v in pts:
            d.append(f"H{px(t):.1f}V{py(v):.1f}")
        d.append(f"H{px(t_end):.1f}")
        width = 2.5 if k == 0 else 1.5  # (the first replay's line stays visible under the others)
        body.append(f'<path class="series" data-replay="{escape(label)}" d="{"".join(d)}" fill="none" '
                    f'stroke="{_colour(k)}" stroke-width="{width}"><title>{escape(label)}</title></path>')
    return _frame(title, f"time since the first arrival ({unit})", y_label,
                  [(px(v * secs), _tick(v)) for v in xt], [(py(v), _tick(v)) for v in yt], "".join(body),
                  list(series), plot_id)


def _waits_by_size(results: dict[str, SimResult]) -> str:
    """Grouped bars: mean wait per CPU range and replay, a whisker from p50 to p95."""
    biggest = max((j.procs for r in results.values() for j in r.jobs), default=1)
    buckets = size_buckets(biggest)
    stats: list[tuple[str, list[tuple[int, float, float, float] | None]]] = []
    for lo, hi in buckets:
        row: list[tuple[int, float, float, float] | None] = []
        for res in results.values():
            w = [s - j.submit for j, s in zip(res.jobs, res.start) if lo <= j.procs <= hi]
            row.append((len(w), sum(w) / len(w), percentile(w, 50), percentile(w, 95)) if w else None)
        if any(row):
            stats.append((str(lo) if lo == hi else f"{lo}-{hi}", row))
    hi_v = max([1.0, *(max(c[1], c[3]) for _, row in stats for c in row if c)])
    top, yt = _nice(hi_v)
    ys = (H - MT - MB) / top
    slot = (W - ML - MR) / max(1, len(stats))
    bar = min(40.0, slot * 0.8 / max(1, len(results)))
    body, xt = [], []
    for g, (name, row) in enumerate(stats):
        left = ML + g * slot + (slot - bar * len(results)) / 2
        xt.append((ML + (g + 0.5) * slot, name))
        for k, (label, c) in enumerate(zip(results, row)):
            if c is None:
                continue
            n, mean, p50, p95 = c
            x = left + k * bar
            y = H - MB - mean * ys
            tip = escape(f"{label}, {name} CPUs: {n} jobs, mean wait {mean:.1f} s, p50 {p50:.0f} s, p95 {p95:.0f} s")
            body.append(f'<g class="bar" data-replay="{escape(label)}"><title>{tip}</title>'
                        f'<rect x="{x + 1:.1f}" y="{y:.1f}" width="{bar - 2:.1f}" height="{max(0.0, mean * ys):.1f}" '
                        f'fill="{_colour(k)}"/>')
            if p95 > 0:
                cx, ya, yb = x + bar / 2, H - MB - p50 * ys, H - MB - p95 * ys
                body.append(f'<path class="whisker" d="M{cx:.1f},{ya:.1f}V{yb:.1f}M{cx - 4:.1f},{yb:.1f}h8'
                            f'M{cx - 4:.1f},{ya:.1f}h8"/>')
            body.append("</g>")
    return _frame("Wait by job size: mean (bar), p50 to p95 (whisker)", "job size (CPUs)", "wait (s)", xt,
                  [(H - MB - v * ys, _tick(v)) for v in yt], "".join(body), list(results), "plot-waits")


def _summary(results: dict[str, SimResult], sources: dict[str, str]) -> str:
    rows = [("configuration", lambda lb, s: sources.get(lb, "")),
            ("policy", lambda lb, s: s["policy"]),
            ("machine", lambda lb, s: f"{s['machine_procs']} CPUs"),
            ("jobs simulated", lambda lb, s: str(s["jobs"])),
            ("jobs skipped", lambda lb, s: str(s["skipped"])),
            ("makespan", lambda lb, s: f"{s['makespan_s']} s ({_duration(s['makespan_s'])})"),
            ("utilization", lambda lb, s: f"{s['utilization']:.2%}"),
            ("mean wait", lambda lb, s: f"{s['mean_wait_s']:.1f} s"),
            ("mean bounded slowdown", lambda lb, s: f"{s['mean_bounded_slowdown']:.2f}"),
            ("max wait", lambda lb, s: f"{s['max_wait_s']} s ({_duration(s['max_wait_s'])})")]
    sums = {lb: r.summary() for lb, r in results.items()}
    head = "".join(f'<th scope="col" style="color:{_colour(k)}">{escape(lb)}</th>' for k, lb in enumerate(results))
    body = "".join(f'<tr><th scope="row">{escape(name)}</th>'
                   + "".join(f"<td>{escape(f(lb, sums[lb]))}</td>" for lb in results) + "</tr>"
                   for name, f in rows)
    return f'<table id="summary"><thead><tr><th></th>{head}</tr></thead><tbody>{body}</tbody></table>'


def _groups(results: dict[str, SimResult]) -> str:
    labels = list(results)
    out = []
    for kind, groups in table(results).items():
        top = "".join(f'<th scope="colgroup" colspan="{len(labels)}">{escape(name)}</th>' for name, _, _ in ROWS)
        sub = "".join(f'<th scope="col" style="color:{_colour(k)}">{escape(lb)}</th>'
                      for _ in ROWS for k, lb in enumerate(labels))
        rows = []
        for group, cols in groups.items():
            cells = []
            for _, fld, fmt in ROWS:
                base = cols.get(labels[0], {}).get(fld)
                for lb in labels:
                    if lb not in cols:
                        cells.append("<td>-</td>")
                        continue
                    v = cols[lb][fld]
                    cls = ""
                    if lb != labels[0] and fld in LOWER_IS_BETTER and base is not None and v != base:
                        cls = ' class="worse"' if v > base else ' class="better"'
                    cells.append(f"<td{cls}>{escape(fmt.format(v))}</td>")
            name = "all jobs" if kind == "all" else group
            rows.append(f'<tr data-kind="{escape(kind)}"><th scope="row">{escape(name)}</th>{"".join(cells)}</tr>')
        out.append(f'<h3>{escape("all jobs" if kind == "all" else "by " + kind)}</h3>'
                   f'<div class="scroll"><table class="groups" data-kind="{escape(kind)}"><thead>'
                   f'<tr><th scope="col" rowspan="2">{escape(kind)}</th>{top}</tr><tr>{sub}</tr></thead>'
                   f'<tbody>{"".join(rows)}</tbody></table></div>')
    return "".join(out)


CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1200px;padding:0 16px;color:#222}
h1{font-size:20px}h2{font-size:17px;margin-top:28px}h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:right;white-space:nowrap}
th[scope=row]{text-align:left;max-width:24em;overflow:hidden;text-overflow:ellipsis}
thead th{background:#f4f4f4}
td.worse{background:#fde2e1}td.better{background:#e1f5e4}
.scroll{overflow-x:auto}
figure{margin:12px 0}figcaption{font-weight:600;margin-bottom:4px}
svg.plot{max-width:100%;height:auto;background:#fff;border:1px solid #eee}
svg .grid{stroke:#eee}svg .axis{stroke:#666}svg .tick{font-size:11px;fill:#444}
svg .label{font-size:12px;fill:#222}svg .whisker{stroke:#222;stroke-width:1.2;fill:none}
p.note{color:#555;max-width:60em}
"""


def page(results: dict[str, SimResult], *, sources: dict[str, str] | None = None, trace: str = "",
         title: str = "slurmlet simulate") -> str:
    """The replays `results` (label -> SimResult, in column order) as one HTML page; `sources`
    names each replay's configuration, `trace` the history replayed."""
    sources = sources or {}
    t_end = max([0.0, *(e for r in results.values() for e in r.end if math.isfinite(e))])
    heading = f"{title}: {trace}" if trace else title
    legend = ", ".join(f"{lb} = {sources[lb]}" if lb in sources else lb for lb in results)
    plots = [
        _over_time("Queue length over time", "pending jobs", {lb: queue_length(r) for lb, r in results.items()},
                   t_end, "plot-queue", y_floor=1.0),
        _waits_by_size(results),
        _over_time("Utilization over time", "busy CPUs / machine CPUs",
                   {lb: utilization(r) for lb, r in results.items()}, t_end, "plot-util", y_floor=1.0),
    ]
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(heading)}</title><style>{CSS}</style></head><body>",
        f"<h1>{escape(heading)}</h1>",
        f'<p class="note">Replays: {escape(legend)}. Waits are start &minus; arrival; bounded slowdown uses '
        "tau = 10 s; utilization is CPU-seconds / (machine CPUs &times; makespan). In the group tables, a "
        "later replay's wait or slowdown is red where it is higher than the first replay's, green where lower. "
        "Time series with more changes than the plot has room for are drawn as time-weighted means.</p>",
        "<h2>Replays</h2>", _summary(results, sources),
        "<h2>Plots</h2>", *plots,
        "<h2>Groups</h2>", _groups(results),
        "</body></html>\n",
    ])
