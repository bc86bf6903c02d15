"""The console's template components (docs/console.md, "Components"): a builtin library, so
every template can use them without ``{% load %}``. The HTML comes from ``console.presentation``
(one place for each).

- ``{% icon "name" %}``: a Lucide icon from the sprite ``make assets`` builds
  (``static/console/build/icons.svg``, which holds exactly the icons templates name this way);
  ``label="…"`` makes it an image with that name, otherwise it is hidden from screen readers.
- ``{% status_pill state "kind" %}``: the one pill of a domain state (kinds and tones in
  ``console.presentation.STATUS_PILLS``); ``live=True`` adds ``role="status"``.
- ``{% human_time value %}``: ``<time>`` saying "3 min ago", the exact UTC time on hover.
- ``{% short_id value %}``: the id shortened, the full id in ``title`` and a copy button.
- ``{% ref name id url=… %}``: a resource's name (a link with ``url``), then its short id.
- ``{% nav_item "key" url "Label" "icon" %}``: a link of the shell's navigation,
  ``aria-current="page"`` when ``key`` is the page's ``nav``.
- ``{{ name|dotted_breaks }}``: a dotted name (an audit action) that wraps after its dots and
  underscores, never inside a word.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from console import presentation

register = template.Library()

ICON_NAME = re.compile(r"^[a-z0-9-]+$")
sprite_url = presentation.sprite_url


@register.simple_tag
def icon(name: str, label: str = "", css_class: str = "") -> str:
    """An inline SVG ``<use>`` of the sprite's symbol ``name``; decorative unless ``label``."""
    if not ICON_NAME.match(name):
        raise template.TemplateSyntaxError(f"icon: {name!r} is not a Lucide icon name")
    classes = f"icon {css_class}".strip()
    href = f"{sprite_url()}#{name}"
    if label:
        return format_html('<svg class="{}" role="img" aria-label="{}" focusable="false"><use href="{}"></use></svg>',
                           classes, label, href)
    return format_html('<svg class="{}" aria-hidden="true" focusable="false"><use href="{}"></use></svg>',
                       classes, href)


@register.simple_tag
def status_pill(state: str | None, kind: str, live: bool = False) -> SafeString:
    if kind not in presentation.STATUS_PILLS:
        raise template.TemplateSyntaxError(f"status_pill: unknown kind {kind!r}")
    return presentation.pill_html(kind, state, live=live)


@register.simple_tag
def human_time(value: datetime | str | None) -> SafeString:
    return presentation.time_html(value)


@register.simple_tag
def short_id(value: str | None, url: str | None = None) -> SafeString:
    return presentation.id_html(value, sprite=sprite_url(), url=url)


@register.simple_tag
def ref(name: str | None, value: str | None, url: str | None = None) -> SafeString:
    return presentation.ref_html(name, value, sprite=sprite_url(), url=url)


@register.simple_tag(takes_context=True)
def nav_item(context: dict[str, Any], key: str, url: str, label: str, icon_name: str) -> SafeString:
    current = SafeString(' aria-current="page"') if context.get("nav") == key else ""
    return format_html('<li><a href="{}"{}>{}<span>{}</span></a></li>', url, current, icon(icon_name), label)


DOTTED_PART = re.compile(r"[^._]*[._]?")


@register.filter
def dotted_breaks(value: str) -> SafeString:
    """``value`` escaped, with a ``<wbr>`` after each dot and underscore."""
    parts = ((part,) for part in DOTTED_PART.findall(str(value)) if part)
    return format_html_join(SafeString("<wbr>"), "{}", parts)
