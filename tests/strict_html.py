"""A strict check of the HTML medprobe writes: what a browser would silently repair is an error here.

    problems = html_problems(text)   # [] when the page is well formed, else one line per problem

html5lib (the WHATWG parser with its list of parse errors) is not a dependency, and xml.etree would need
XHTML (every void element self-closed, no `<!DOCTYPE html>`), which is not what the pages are. So this
reads the page with the standard library's tokenizer (html.parser) and fails where it is lenient:

- text or an attribute value holding a raw `<`, or a `&` that starts no known character reference
  (`<0.001` written unescaped is read as text by a browser today, and as a tag once a letter follows);
- an end tag that closes no open element or skips one, an element left open, a void element closed;
- elements a browser's parser would move or close early: a block (`div`, `table`, `ul`, ...) inside a `p`,
  a `tr` outside `thead`/`tbody`, a cell outside a `tr`, a `caption` that is not a table's first child;
- a duplicate id, a `#fragment` link to no id on the page.

It is deliberately stricter than HTML (every `p`, `li`, `td` closed explicitly): medprobe writes them so.
"""

from __future__ import annotations

import html.entities
import re
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
BLOCKS = {"div", "table", "ul", "ol", "dl", "h1", "h2", "h3", "h4", "h5", "h6", "p", "figure", "section", "nav", "details"}
PARENTS = {
    "tr": {"thead", "tbody", "tfoot"},
    "td": {"tr"},
    "th": {"tr"},
    "thead": {"table"},
    "tbody": {"table"},
    "caption": {"table"},
    "li": {"ul", "ol"},
    "summary": {"details"},
    "figcaption": {"figure"},
}


class StrictParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.open: list[str] = []
        self.problems: list[str] = []
        self.ids: list[str] = []
        self.fragments: list[str] = []
        self.children: list[int] = [0]  # per open element: its element children so far

    def where(self) -> str:
        line, column = self.getpos()
        return f"line {line}, column {column + 1}"

    def problem(self, text: str) -> None:
        self.problems.append(f"{self.where()}: {text}")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.check_attributes(tag, attrs)
        self.check_place(tag)
        self.children[-1] += 1
        if tag not in VOID:
            self.open.append(tag)
            self.children.append(0)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.check_attributes(tag, attrs)
        self.check_place(tag)
        self.children[-1] += 1
        if tag not in VOID and "svg" not in self.open and tag != "svg":
            self.problem(f"<{tag}/> is not a void element: a browser leaves it open")

    def check_place(self, tag: str) -> None:
        parent = self.open[-1] if self.open else None
        if tag in BLOCKS and "p" in self.open:
            self.problem(f"<{tag}> inside a <p>: a browser closes the <p> before it")
        if tag in PARENTS and parent not in PARENTS[tag]:
            self.problem(f"<{tag}> inside <{parent}>, expected inside one of {sorted(PARENTS[tag])}")
        if tag == "caption" and self.children[-1] != 0:
            self.problem("<caption> is not the first child of its <table>")

    def check_attributes(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = [name for name, _ in attrs]
        if len(set(names)) != len(names):
            self.problem(f"<{tag}> repeats an attribute: {names}")
        raw = self.get_starttag_text() or ""
        inside = re.sub(r'"[^"]*"', '""', raw[1:-1])
        if "<" in inside or "'" in inside:
            self.problem(f"<{tag}>: an attribute left unquoted or a stray '<': {raw[:80]}")
        if "<" in raw[1:-1]:  # the start tag as written: html.parser hands over values with &lt; already decoded
            self.problem(f"<{tag}>: a raw '<' in an attribute value (write &lt;): {raw[:80]}")
        for name, value in attrs:
            if value is None:
                continue
            if name == "id":
                self.ids.append(value)
            if name == "href" and value.startswith("#"):
                self.fragments.append(value[1:])

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            self.problem(f"</{tag}>: a void element has no end tag")
            return
        if not self.open:
            self.problem(f"</{tag}> closes nothing")
            return
        if self.open[-1] != tag:
            self.problem(f"</{tag}> while <{self.open[-1]}> is open (open: {' > '.join(self.open)})")
            if tag in self.open:  # recover as a browser would: close up to it
                while self.open and self.open[-1] != tag:
                    self.open.pop()
                    self.children.pop()
            else:
                return
        self.open.pop()
        self.children.pop()

    def handle_data(self, data: str) -> None:
        if "<" in data:
            self.problem(f"a raw '<' in the text {data.strip()[:60]!r}: write &lt;")
        if "&" in data:
            self.problem(f"a raw '&' in the text {data.strip()[:60]!r}: write &amp;")

    def handle_entityref(self, name: str) -> None:
        if f"{name};" not in html.entities.html5:
            self.problem(f"&{name}; is no character reference")

    def handle_charref(self, name: str) -> None:
        pass

    def unknown_decl(self, data: str) -> None:
        self.problem(f"an unknown declaration <!{data[:40]}>")


def html_problems(text: str) -> list[str]:
    """Every problem of the page `text`, one line each ([] when it is well formed)."""
    parser = StrictParser()
    if not text.lstrip().lower().startswith("<!doctype html>"):
        parser.problems.append("line 1: no <!DOCTYPE html> first (a browser renders the page in quirks mode)")
    # an '&' not followed by a reference is reported by html.parser as data; one followed by an unterminated
    # name (`&amp` without ';') as an entity: both are caught above or here
    for match in re.finditer(r"&(?![A-Za-z0-9#]+;)", text):
        line = text.count("\n", 0, match.start()) + 1
        parser.problems.append(f"line {line}: a '&' that starts no complete character reference")
    parser.feed(text)
    parser.close()
    if parser.open:
        parser.problem(f"left open at the end: {' > '.join(parser.open)}")
    repeated = sorted({name for name in parser.ids if parser.ids.count(name) > 1})
    if repeated:
        parser.problems.append(f"ids used twice: {', '.join(repeated)}")
    missing = sorted(set(parser.fragments) - set(parser.ids))
    if missing:
        parser.problems.append(f"links to #fragments no element has as id: {', '.join(missing)}")
    return list(dict.fromkeys(parser.problems))
