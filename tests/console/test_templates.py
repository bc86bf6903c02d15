"""Template hygiene: Django's ``{# #}`` comment is single-line, so one spread over lines is
rendered as text into the page; and every table column has a header. Every console template is checked."""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def test_no_template_comment_spans_lines():
    offenders = []
    for template in sorted(TEMPLATES.rglob("*.html")):
        for number, line in enumerate(template.read_text().splitlines(), start=1):
            for start in [i for i in range(len(line)) if line.startswith("{#", i)]:
                if "#}" not in line[start:]:
                    offenders.append(f"{template.relative_to(TEMPLATES)}:{number}")
    assert not offenders, "use {% comment %} for comments over several lines: " + ", ".join(offenders)


def test_every_table_header_cell_has_a_name():
    """A column without a header leaves screen reader users guessing what its cells are: an
    actions column says so in a visually hidden "Actions" (the Sharing tab's, the Access page's)."""
    offenders = []
    for template in sorted(TEMPLATES.rglob("*.html")):
        text = template.read_text()
        for header in re.finditer(r"<th\b[^>]*>(.*?)</th>", text, re.S):
            if not re.sub(r"<[^>]+>", "", header.group(1)).strip():
                offenders.append(f"{template.relative_to(TEMPLATES)}: {header.group(0)[:80]}")
    assert not offenders, "name every column: " + ", ".join(offenders)
