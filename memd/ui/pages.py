"""Each view of the page as HTML, from the answers the library gives (``as_dict`` form).

Everything a note, a path or an answer says is escaped here; only ``notehtml`` makes
markup from a note's text, and it lets nothing through that runs.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING
from urllib.parse import quote

from memd.ui.notehtml import note_url

if TYPE_CHECKING:
    from memd.store.rows import Supersession
    from memd.ui.reading import Day, Update

VIEWS = (("search", "Search"), ("timeline", "Timeline"), ("current", "What is current"),
         ("review", "Review"), ("status", "Status"))  # fmt: skip


def page(title: str, view: str, body: str, daemon: str | None, live: bool = False) -> str:
    """A whole page: the bar of views, what answers (the daemon, or the index alone), the
    view. ``live``: the script refreshes the view when the index changes."""
    nav = "".join(
        f'<a href="/{name}"{" aria-current=page" if name == view else ""}>{label}</a>'
        for name, label in VIEWS
    )
    state = (
        f'<p class="banner ok">daemon running: {escape(daemon)}</p>'
        if daemon
        else '<p class="banner off">the daemon is stopped: this page reads the index as it '
        "was last written, and nothing changes until memd runs again</p>"
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)} · memd</title>"
        '<link rel="stylesheet" href="/static/ui.css"><script src="/static/ui.js" defer></script>'
        f"</head><body><header><strong>memd</strong><nav>{nav}</nav></header>{state}"
        f'<main id="main"{" data-live" if live else ""}>{body}</main></body></html>'
    )


def error(message: str) -> str:
    return f'<p class="error" role="alert">{escape(message)}</p>'


def cite(citation: str) -> str:
    return f'<a class="cite" href="{escape(note_url(citation))}">{escape(citation)}</a>'


def search(query: str, answer: dict | None) -> str:
    form = (
        '<form class="search" method="get" action="/search">'
        f'<input type="search" name="q" value="{escape(query)}" placeholder="search memory" '
        'autofocus aria-label="query"><button>Search</button></form>'
    )
    if answer is None:
        return form
    notes = [answer["warning"]] if answer.get("warning") else []
    head = f'<p class="meta">{escape(answer["mode"])} search'
    head += "".join(f" · {escape(n)}" for n in notes) + "</p>"
    results = answer["results"]
    if not results:
        if answer.get("below_floor"):
            best = answer.get("best_score") or 0.0
            return form + head + f"<p>Nothing above the relevance floor (best {best:.2f}).</p>"
        return form + head + "<p>Nothing relevant found.</p>"
    strong = [r for r in results if r.get("match") != "weak"]
    weak = [r for r in results if r.get("match") == "weak"]
    out = form + head
    if strong:
        out += '<section class="strong"><h2>Matches</h2>' + "".join(map(_hit, strong))
        out += "</section>"
    if weak:
        out += '<section class="weak"><h2>Weaker matches, below the relevance floor</h2>'
        out += "".join(map(_hit, weak)) + "</section>"
    return out


def _hit(hit: dict) -> str:
    later = ""
    if hit.get("superseded_by"):
        how = " (likely)" if hit.get("superseded") == "likely" else ""
        now = f": {escape(hit['now'])}" if hit.get("now") else ""
        later = f'<p class="replaced">replaced by {cite(hit["superseded_by"])}{how}{now}</p>'
    more = f' <span class="meta">+{hit["more_chunks"]} more in this note</span>' if hit.get(
        "more_chunks") else ""  # fmt: skip
    heading = f' <span class="heading">{escape(hit["heading"])}</span>' if hit["heading"] else ""
    return (
        f'<article class="hit {escape(hit.get("match", "strong"))}">'
        f'<p><span class="score">{hit["score"]:.2f}</span> {cite(hit["citation"])}{heading}'
        f"{more}</p>{later}<pre class=snippet>{escape(hit['snippet'])}</pre></article>"
    )


def timeline(days: Sequence[Day], more: str | None) -> str:
    if not days:
        return "<p>No notes indexed yet.</p>"
    out = ['<ol class="timeline">']
    for day in days:
        items = [f'<li class="daily"><a href="{escape(note_url(p))}">{escape(p)}</a></li>'
                 for p in day.daily]  # fmt: skip
        items += [f'<li class="flush">flush {escape(title)} {cite(c)}</li>'
                  for c, title in day.flushes]  # fmt: skip
        items += [f'<li><a href="{escape(note_url(p))}">{escape(p)}</a></li>' for p in day.notes]
        items += [f'<li class="session">session <a href="{escape(note_url(p))}">{escape(p)}</a>'
                  "</li>" for p in day.sessions]  # fmt: skip
        if day.unlisted:
            items.append(f'<li class="more"><a href="/timeline?day={quote(day.date)}">'
                         f"{day.unlisted} more of this day</a></li>")  # fmt: skip
        title = escape(day.date)
        if day.daily:
            title = f'<a href="{escape(note_url(day.daily[0]))}">{title}</a>'
        out.append(f'<li class="day"><h2>{title}</h2><ul>{"".join(items)}</ul></li>')
    out.append("</ol>")
    if more:
        out.append(f'<p><a href="/timeline?before={quote(more)}">Older days</a></p>')
    return "".join(out)


def note(answer: dict, body_html: str, replaced: list[Supersession],
         replacing: list[Supersession]) -> str:  # fmt: skip
    path = answer["path"]
    out = [f'<h1 class="path">{escape(path)}</h1>']
    if answer.get("next_from") or answer["from"] > 1:
        last = answer["from"] + answer["lines"] - 1
        more = (f' <a href="/note?path={quote(path, safe="/")}&amp;from={answer["next_from"]}'
                f'&amp;to={answer["next_from"]}#cited">on from line {answer["next_from"]}</a>'
                if answer.get("next_from") else "")  # fmt: skip
        out.append(f'<p class="meta">lines {answer["from"]} to {last} of {answer["total_lines"]}'
                   f"{more}</p>")  # fmt: skip
    if replaced:
        out.append('<section class="relations"><h2>Replaced since</h2><ul>')
        for r in replaced:
            mine = f"{path}#L{r.start_line}-L{r.end_line}"
            likely = " (likely)" if r.likely else ""
            now = f": {escape(r.now)}" if r.now else ""
            out.append(f"<li>{cite(mine)} replaced by {cite(r.by)}{likely}{now}</li>")
        out.append("</ul></section>")
    if replacing:
        out.append('<section class="relations"><h2>Updates it makes</h2><ul>')
        for r in replacing:
            old = f"{r.path}#L{r.start_line}-L{r.end_line}"
            out.append(f"<li>{cite(r.by)} replaces {cite(old)}</li>")
        out.append("</ul></section>")
    out.append(f'<article class="note">{body_html}</article>')
    links = answer.get("backlinks") or []
    if links:
        out.append('<section class="relations"><h2>Backlinks</h2><ul>')
        out += [f"<li>{cite(c)}</li>" for c in links]
        out.append("</ul></section>")
    return "".join(out)


def current(updates: Sequence[Update], week_only: bool) -> str:
    scope = "this week" if week_only else "in all the notes"
    other = ('<a href="/current?all=1">all updates</a>' if week_only
             else '<a href="/current">this week only</a>')  # fmt: skip
    out = [f"<p>The updates memd found {scope}: the agent is told the newer of each "
           f"(old → new). {other}</p>"]  # fmt: skip
    if not updates:
        return out[0] + "<p>None found.</p>"
    out.append('<ol class="updates">')
    for u in updates:
        mark = ' <span class="likely" title="found by subject and value alone">likely</span>'
        out.append(
            f'<li><span class="day">{escape(u.day)}</span>{mark if u.likely else ""}'
            f'<div class="old"><s>{escape(u.old_text)}</s> {cite(u.old)}</div>'
            f'<div class="new">→ {escape(u.new_text)} {cite(u.new)}</div></li>'
        )
    out.append("</ol>")
    return "".join(out)


def review(report: dict | None, csrf: str, result: str = "") -> str:
    out = [result]
    run = (f'<form method="post" action="/review/run"><input type="hidden" name="csrf" '
           f'value="{escape(csrf)}"><button>Review now</button></form>')  # fmt: skip
    if report is None:
        return "".join(out) + "<p>No review has run yet.</p>" + run
    out.append(f'<p class="meta">reviewed {escape(report["reviewed_at"])} over '
               f'{report["files"]} notes</p>{run}')  # fmt: skip
    if not report["proposals"]:
        out.append("<p>No proposals wait.</p>")
    for p in report["proposals"]:
        cites = " ".join(cite(c) for c in p["citations"])
        pid = escape(p["id"])
        buttons = "".join(
            f'<form method="post" action="/review/{verb}"><input type="hidden" name="csrf" '
            f'value="{escape(csrf)}"><input type="hidden" name="id" value="{pid}">'
            f'<button class="{verb}">{verb.title()}</button></form>'
            for verb in (("apply", "dismiss") if p["action"] != "none" else ("dismiss",))
        )
        out.append(
            f'<article class="proposal" id="p-{pid}"><p><span class="kind">{escape(p["kind"])}'
            f'</span> {escape(p["reason"])}</p><p>{cites}</p><p class="meta">{escape(p["action"])}'
            f"</p><pre>{escape(p['text'])}</pre><div class=buttons>{buttons}</div></article>"
        )
    return "".join(out)


def review_result(answer: dict) -> str:
    lines = []
    for a in answer.get("applied", []):
        if "error" in a:
            lines.append(f'<li class="error">{escape(a["id"])}: {escape(a["error"])}</li>')
            continue
        where = ""
        if a.get("path"):
            where = " " + cite(f"{a['path']}#L{a.get('start_line', 1)}-L{a.get('end_line', 1)}")
        again = " (already applied before: nothing written again)" if a.get("duplicate") else ""
        lines.append(f"<li>applied {escape(a['id'])}: {escape(str(a.get('action')))}"
                     f"{where}{again}</li>")  # fmt: skip
    lines += [f"<li>dismissed {escape(i)}</li>" for i in answer.get("dismissed", [])]
    return f'<ul class="result" role="status">{"".join(lines)}</ul>'


def status(s: dict, samples: Sequence[tuple[float, int, int]]) -> str:
    if s["provider"] == "none":
        embeddings = "off: keyword search only"
    else:
        model = f" {s['model']}" if s.get("model") else ""
        embeddings = (f"{s['provider']}{model}: {s['embedded_chunks']} chunks embedded, "
                      f"{s['pending_embeddings']} waiting")  # fmt: skip
    rows = [
        ("workspace", f"{s['workspace']} ({s['path']})"),
        ("files", s["files"]),
        ("chunks", s["chunks"]),
        ("embeddings", embeddings),
        ("watcher", s["watcher"]),
        ("last indexed", s.get("last_indexed_at") or "never"),
        ("files waiting", s["pending_files"]),
        ("database", f"{s['database']} ({s['database_bytes'] // 1024} KiB)"),
        ("config", s.get("config") or "defaults"),
        ("config drift", s.get("config_drift") or "none: what runs is what the file says"),
    ]
    rows += _team(s.get("team"))
    review = s.get("review")
    if review:
        said = [f"{review.get('waiting', 0)} proposals waiting"]
        said += [f"{k.replace('_', ' ')} {review[k]}" for k in ("reviewed_at", "next_at", "state")
                 if review.get(k)]  # fmt: skip
        rows.append(("review", ", ".join(said)))
    table = "".join(f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>" for k, v in rows)
    return f'<table class="status">{table}</table>' + _embedding(s.get("embedding"), samples)


def _team(team: dict | None) -> list[tuple[str, object]]:
    """Publishing to the team's database: as whom and how (its errors are in its state),
    what waits, when it last published, what it refused."""
    if not team:
        return []
    outbox = team.get("outbox")
    waiting = (
        "unknown" if outbox is None else f"{outbox} file{'s' * (outbox != 1)} not yet published"
    )
    rows: list[tuple[str, object]] = [
        ("team", f"publishing as {team.get('host')}: {team.get('state')}"),
        ("team outbox", waiting),
        ("team last publish", team.get("published_at") or "never"),
    ]
    if team.get("refused"):
        rows.append(("team refused", team.get("refused_files") or f"{team['refused']} files"))
    return rows


def _embedding(progress: dict | None, samples: Sequence[tuple[float, int, int]]) -> str:
    """Embedding progress: rate, time left, and the chunks embedded over the last hour."""
    out = "<h2>Embedding</h2>"
    if progress:
        rate = f"{progress['per_s']:.1f} chunks/s" if progress.get("per_s") else "rate unknown"
        left = (f"about {dt.timedelta(seconds=int(progress['eta_s']))} left"
                if progress.get("eta_s") else "time left unknown")  # fmt: skip
        out += (f'<p class="embedding">{progress["done"]} of {progress["total"]} chunks; '
                f"{rate}; {left}</p>")  # fmt: skip
    else:
        out += '<p class="embedding">every chunk has its vector</p>'
    return out + _chart(samples)


def _chart(samples: Sequence[tuple[float, int, int]]) -> str:
    """Done and total chunks over the last hour as an inline SVG line chart."""
    if len(samples) < 2:
        return '<p class="meta">the chart fills in as this page keeps running</p>'
    w, h = 600, 120
    t0, t1 = samples[0][0], max(samples[-1][0], samples[0][0] + 1)
    top = max(max(total for _, _, total in samples), 1)

    def line(pick: int) -> str:
        return " ".join(
            f"{(s[0] - t0) / (t1 - t0) * w:.1f},{h - s[pick] / top * h:.1f}" for s in samples
        )

    return (
        f'<svg class="chart" viewBox="0 0 {w} {h}" role="img" aria-label="chunks embedded over '
        f'the last hour"><polyline class="total" points="{line(2)}"/>'
        f'<polyline class="done" points="{line(1)}"/></svg>'
        f'<p class="meta">chunks with vectors (solid) of all chunks (dashed), from 0 to {top} '
        f"chunks, over the last {_minutes(t1 - t0)}</p>"
    )


def _minutes(seconds: float) -> str:
    n = max(round(seconds / 60), 1)
    return f"{n} minute{'s' * (n != 1)}"
