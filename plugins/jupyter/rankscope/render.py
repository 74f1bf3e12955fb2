# SPDX-License-Identifier: MIT
"""Formatting at the edge: a run snapshot as text, as HTML with a loss chart, as a Jupyter MIME bundle.

The chart is drawn by matplotlib (Agg, PNG; no pyplot state is touched) when it can be imported; without it
the output is the per-rank table (step, latest loss), which updates just the same. RankScope draws no charts
of its own.
"""

import base64
import html
import io
import math

from .runview import TERMINAL_STATES, as_number

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
          "#bcbd22", "#17becf"]
MAX_DRAWN_POINTS = 800  # per rank; longer series are thinned for drawing only

try:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    HAVE_MATPLOTLIB = True
except ImportError:  # optional: without it, the table alone
    HAVE_MATPLOTLIB = False


def format_loss(value):
    if value is None:
        return "-"
    if not math.isfinite(value):
        return str(value)
    return f"{value:.4f}"


def rank_loss(snapshot, rank):
    """A rank's latest loss: its state's, else its newest step event's."""
    state = snapshot.ranks.get(rank, {})
    loss = state.get("loss")
    if isinstance(loss, (int, float)) and not isinstance(loss, bool):
        return float(loss)
    if isinstance(loss, str):
        try:
            return float(loss)
        except ValueError:
            pass
    last = snapshot.last_loss.get(rank)
    return last[1] if last else None


def all_ranks(snapshot):
    return sorted(set(snapshot.ranks) | set(snapshot.series) | set(snapshot.last_loss))


def headline(snapshot):
    record = snapshot.record
    name = record.get("name")
    state = record.get("state", "unknown")
    text = f"run {snapshot.run}" + (f" ({name})" if name else "") + f": {state}"
    if record.get("mode"):
        text += f", {record['mode']} mode"
    if record.get("world_size"):
        text += f", {record['world_size']} ranks"
    return text


def rank_table(snapshot):
    rows = [("rank", "host", "state", "epoch", "step", "loss", "steps/s", "exit")]
    for rank in all_ranks(snapshot):
        state = snapshot.ranks.get(rank, {})
        last = snapshot.last_loss.get(rank)
        step = state.get("step", last[0] if last else "-")
        speed = state.get("steps_per_second")
        exit_status = state.get("exit_status")
        rows.append((str(rank), str(state.get("host", "-")), str(state.get("state", "-")),
                     str(state.get("epoch", "-")), str(step), format_loss(rank_loss(snapshot, rank)),
                     f"{speed:.2f}" if isinstance(speed, (int, float)) else "-",
                     "-" if exit_status is None else str(exit_status)))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def diagnosis_lines(snapshot):
    """Each finding on a line; under a root cause, what its rank wrote last (the bridge's last_lines)."""
    lines = []
    for diagnosis in snapshot.diagnoses:
        mark = " (resolved)" if diagnosis.get("resolved") else ""
        lines.append(f"{diagnosis.get('kind', 'diagnosis')}: {diagnosis.get('message', '')}{mark}")
        said = [line for line in diagnosis.get("last_lines") or [] if isinstance(line, dict)]
        ranks = diagnosis.get("ranks") or []
        if said and ranks:
            lines.append(f"  rank {ranks[0]} said last:")
            lines += [f"    [{line.get('stream', '?')}] {line.get('text', '')}" for line in said]
    return lines


def run_verdict(record):
    """What a listing shows of a run: its verdict (the whole one, once it ended: the root cause with the hung rank it
    waited on, a stopped run's hang), or its summary; "" while it has neither."""
    return record.get("verdict") or record.get("summary") or ""


def summary_lines(snapshot):
    """The final summary: state, each rank's final loss (and exit), the run's verdict or summary."""
    record = snapshot.record
    lines = [f"run {snapshot.run} {record.get('state', 'ended')}"
             + (f": {run_verdict(record)}" if run_verdict(record) else "")]
    for rank in all_ranks(snapshot):
        state = snapshot.ranks.get(rank, {})
        last = snapshot.last_loss.get(rank)
        step = state.get("step", last[0] if last else None)
        detail = [f"step {step}"] if step is not None else []
        if state.get("state"):
            detail.append(str(state["state"]))
        if state.get("exit_status") is not None:
            detail.append(f"exit {state['exit_status']}")
        if state.get("reason"):
            detail.append(str(state["reason"]))
        lines.append(f"rank {rank} final loss {format_loss(rank_loss(snapshot, rank))} ({', '.join(detail)})")
    if snapshot.evals:
        epoch = max(snapshot.evals, key=lambda key: key if isinstance(key, int) else -1)
        evaluation = snapshot.evals[epoch]
        loss, accuracy = evaluation.get("val_loss"), evaluation.get("val_accuracy")
        lines.append(f"validation after epoch {epoch}: loss {format_loss(as_number(loss))}, accuracy "
                     + (f"{accuracy:.4f}" if isinstance(accuracy, (int, float)) else str(accuracy)))
    first_failed = record.get("first_failed_rank")
    if isinstance(first_failed, int) and first_failed >= 0:  # -1: none
        lines.append(f"first failed rank: {first_failed}")
    return lines


def status_text(snapshot):
    lines = [headline(snapshot), *rank_table(snapshot)]
    if not snapshot.finished and snapshot.progress:
        lines += [f"{host}: {message}" for host, message in sorted(snapshot.progress.items())]
    diagnoses = diagnosis_lines(snapshot)
    if diagnoses:
        lines += ["diagnoses:", *("  " + line for line in diagnoses)]
    if snapshot.dropped:
        lines.append(f"({snapshot.dropped} notifications dropped by the bridge; refreshed from run.get)")
    if snapshot.finished or snapshot.record.get("state") in TERMINAL_STATES:
        lines += ["", *summary_lines(snapshot)]
    return "\n".join(lines)


def thin(points, limit=MAX_DRAWN_POINTS):
    if len(points) <= limit:
        return points
    stride = math.ceil(len(points) / limit)
    return points[::stride] + ([points[-1]] if (len(points) - 1) % stride else [])


def chart_png(snapshot, width=7.0, height=3.0):
    """The loss per rank as PNG bytes (matplotlib, Agg); None without matplotlib or data."""
    if not HAVE_MATPLOTLIB or not any(snapshot.series.values()):
        return None
    figure = Figure(figsize=(width, height), dpi=96)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    for rank in sorted(snapshot.series):
        points = thin(snapshot.series[rank])
        axes.plot([p[0] for p in points], [p[1] for p in points], label=f"rank {rank}",
                  color=COLORS[rank % len(COLORS)], linewidth=1.2)
    axes.set_xlabel("step")
    axes.set_ylabel("loss")
    axes.set_title(f"loss per rank, run {snapshot.run}", fontsize=10)
    axes.grid(True, alpha=0.3)
    axes.legend(loc="upper right", fontsize=8)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def chart_html(snapshot, renderer="auto"):
    """The chart as an HTML fragment, or "" with no data yet or no matplotlib. renderer: auto, png or none."""
    if renderer in ("auto", "png"):
        png = chart_png(snapshot)
        if png:
            return f'<img alt="loss per rank" src="data:image/png;base64,{base64.b64encode(png).decode()}"/>'
    return ""


def bundle(snapshot, renderer="auto"):
    """A MIME bundle for display(..., raw=True): HTML (chart and status) for notebooks, text for the rest."""
    text = status_text(snapshot)
    chart = chart_html(snapshot, renderer)
    if not chart:
        chart = ("<p><i>waiting for the first steps…</i></p>" if not any(snapshot.series.values())
                 else "<p><i>(install python3-matplotlib for the loss chart)</i></p>")
    page = f'<div class="rankscope-run">{chart}<pre>{html.escape(text)}</pre></div>'
    return {"text/plain": text, "text/html": page}
