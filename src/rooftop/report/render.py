"""HTML from the Jinja2 templates of rooftop/report/templates (package
data, autoescaped: a value is always text; only another template's output
is markup). One template per part of a page: page.html lays out the
campaign report, parts/*.html its parts, sections/*.html the studies'
report sections (rooftop.results.sections: an entry names its template),
bursts.html, audit.html and tune.html the studies' own pages; base.html
is what every page shares (head, style, footer) and macros.html the tables
and figures.

A figure is embedded as a PNG (figure()): shown fitted to the column, at
100 pixels per inch of the figure when there is room; on a narrow screen a
tap shows it at that size, scrolling sideways inside its own box (CSS
only, no script).

The Markdown files (report.md) take the same rule from md_text(): a value
(a host name, a note, an error, a service's name) is text there too, never
markup, and one line."""

from __future__ import annotations

import base64
import re
import struct
import urllib.parse
from functools import cache
from importlib import resources
from pathlib import Path

import jinja2
from markupsafe import Markup

from rooftop import __version__

#: Figures are saved at this resolution (rooftop.plots.save) ...
SAVED_DPI = 150
#: ... and shown at this one: an 8 pt label is 11 CSS pixels.
SHOWN_PPI = 100


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("rooftop.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    css = resources.files("rooftop.report").joinpath("templates", "report.css").read_text()
    env.globals.update(version=__version__, css=Markup(css))
    return env


def render(template: str, **context) -> Markup:
    """The template's HTML (markup: another template may include it as is)."""
    return Markup(environment().get_template(template).render(**context))


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) in pixels, from the PNG's header."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    return struct.unpack(">II", png[16:24])


def figure(png: Path | bytes, ident: str, alt: str, caption: str = "", dpi: float = SAVED_DPI) -> dict:
    """What macros.figure shows: the PNG (a file, or its bytes, saved at
    dpi) inline as a data URI, its size in CSS pixels at SHOWN_PPI, its alt
    text and caption."""
    data = png if isinstance(png, bytes) else png.read_bytes()
    w, h = png_size(data)
    return {
        "id": ident,
        "alt": alt,
        "caption": caption,
        "src": "data:image/png;base64," + base64.b64encode(data).decode(),
        "width": round(w * SHOWN_PPI / dpi),
        "height": round(h * SHOWN_PPI / dpi),
    }


#: Markdown's markup anywhere in a line; _ only where it can open or close
#: emphasis (not inside a word: O_DIRECT stays as it is).
_MD_MARKUP = re.compile(r"[\\`*\[\]<&|~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
#: ... and at the start of a line: a heading, a quote, a list item, a rule.
_MD_START = re.compile(r"^(?:[#>]|[+-](?= |$)|[=-]+$|\d{1,9}(?=[.)](?: |$)))")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def md_text(value) -> str:
    """value as Markdown text, one line: what it says is shown as written,
    never read as markup or HTML (a host name "<img src=x>" or
    "vm\\n# heading" stays text on its line). Whitespace (newlines too) is
    one space; other control characters are shown as U+FFFD."""
    text = _CONTROL.sub("\ufffd", " ".join(str(value).split()))
    text = _MD_MARKUP.sub(lambda m: "\\" + m.group(0), text)
    start = _MD_START.match(text)
    if start is None:
        return text
    if start.group(0)[0].isdigit():  # "1." starts an ordered list: the dot escaped
        return f"{start.group(0)}\\{text[start.end() :]}"
    return "\\" + text


def md_row(cells) -> str:
    """A Markdown table row of text cells."""
    return "| " + " | ".join(md_text(c) for c in cells) + " |"


def md_image(alt, path) -> str:
    """A Markdown image: alt as text, the path percent-encoded (it may hold
    spaces or brackets)."""
    return f"![{md_text(alt)}]({urllib.parse.quote(str(path), safe='/')})"
