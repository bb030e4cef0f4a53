"""HTML reports: a page of sections, each a title and an HTML body, rendered with jinja2."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import jinja2
from markupsafe import Markup, escape

from gpufleet import __version__


@dataclass(frozen=True)
class Section:
    title: str
    html: str

    @property
    def anchor(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")


def img(b64: str, alt: str) -> str:
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{b64}">'


def table(headers: list[str], rows: list[list[object]]) -> str:
    esc = escape
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c if isinstance(c, Markup) else esc(c)}</td>"
                                    for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render(title: str, subtitle: str, sections: list[Section]) -> str:
    text = resources.files("gpufleet.report").joinpath("templates/report.html").read_text()
    env = jinja2.Environment(autoescape=True)
    return env.from_string(text).render(title=title, subtitle=subtitle, sections=sections,
                                        version=__version__)
