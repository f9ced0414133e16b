"""HTML pages from Jinja2 templates, shipped as package data (``<package>/templates/``).

One environment per package, autoescaping on: every value a template prints is escaped
unless it is ``Markup`` (an SVG drawn by our own code). Undefined names are errors, so a
template that asks for a value the page does not pass fails loudly, not blank.
"""

from __future__ import annotations

import functools

import jinja2


@functools.cache
def environment(package: str) -> jinja2.Environment:
    """The template environment of ``package`` (its ``templates/`` folder)."""
    env = jinja2.Environment(loader=jinja2.PackageLoader(package, "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    return env


def render(package: str, name: str, **context: object) -> str:
    """``package``'s template ``name`` filled with ``context``."""
    return environment(package).get_template(name).render(**context)
