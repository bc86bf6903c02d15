"""Template hygiene: Django's ``{# #}`` comment is single-line, so one spread over lines is
rendered as text into the page. Every console template is checked."""

from __future__ import annotations

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
