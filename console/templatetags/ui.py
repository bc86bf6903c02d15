"""The console's template components (docs/console.md, "Components"): a builtin library, so
every template can use them without ``{% load %}``.

- ``{% icon "name" %}``: a Lucide icon from the sprite ``make assets`` builds
  (``static/console/build/icons.svg``, which holds exactly the icons templates name this way).
"""

from __future__ import annotations

import re

from django import template
from django.templatetags.static import static
from django.utils.html import format_html

register = template.Library()

ICON_SPRITE = "console/build/icons.svg"
ICON_NAME = re.compile(r"^[a-z0-9-]+$")


@register.simple_tag
def icon(name: str, label: str = "", css_class: str = "") -> str:
    """An inline SVG ``<use>`` of the sprite's symbol ``name``; decorative unless ``label``."""
    if not ICON_NAME.match(name):
        raise template.TemplateSyntaxError(f"icon: {name!r} is not a Lucide icon name")
    classes = f"icon {css_class}".strip()
    href = f"{static(ICON_SPRITE)}#{name}"
    if label:
        return format_html('<svg class="{}" role="img" aria-label="{}" focusable="false"><use href="{}"></use></svg>',
                           classes, label, href)
    return format_html('<svg class="{}" aria-hidden="true" focusable="false"><use href="{}"></use></svg>',
                       classes, href)
