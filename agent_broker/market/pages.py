"""Rendering the public pages: Jinja2 templates with autoescaping (every listing title is
someone's input), and the scorecard's score distribution as an inline SVG bar chart, so a
page needs no script at all. Links are relative: the pages work on whatever name serves
them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape

TEMPLATES = Path(__file__).with_name("templates")
SORTS = (
    ("newest", "Newest first"),
    ("price_asc", "Price, low to high"),
    ("price_desc", "Price, high to low"),
)
_environment = Environment(
    loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]), auto_reload=False
)


@dataclass(frozen=True)
class Bar:
    label: int
    count: int
    x: int
    y: int
    width: int
    height: int


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]


def score_chart(distribution: list[int], *, width: int = 300, height: int = 140) -> Chart:
    """Five bars (1 to 5 stars), scaled to the largest count; room below for the labels
    and above for the counts."""
    top, bottom, gap = 18, 20, 12
    bar_width = (width - gap * 6) // 5
    tallest = max(distribution) or 1
    usable = height - top - bottom
    bars = []
    for index, count in enumerate(distribution):
        bar_height = round(usable * count / tallest)
        x = gap + index * (bar_width + gap)
        bars.append(Bar(index + 1, count, x, top + usable - bar_height, bar_width, bar_height))
    return Chart(width, height, bars)


def render(template: str, **context: Any) -> str:
    return _environment.get_template(template).render(**context)


def market_page(page: dict, *, q: str | None, sort: str) -> str:
    next_url = None
    if page.get("next_cursor"):
        query = {
            k: v for k, v in {"q": q, "sort": sort, "cursor": page["next_cursor"]}.items() if v
        }
        next_url = f"/market?{urlencode(query)}"
    return render(
        "market.html",
        listings=page["listings"],
        q=q,
        sort=sort,
        sorts=SORTS,
        next_url=next_url,
    )


def reputation_page(record: dict) -> str:
    card = record["scorecard"]
    return render(
        "reputation.html",
        record=record,
        card=card,
        chart=score_chart(card["score_distribution"]),
    )


def error_page(status: int, detail: str) -> str:
    return render("error.html", status=status, detail=detail)
