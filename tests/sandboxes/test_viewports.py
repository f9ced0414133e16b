"""Named viewports and the WIDTHxHEIGHT syntax of every --viewport option."""

from __future__ import annotations

import pytest

from sandboxes.errors import ConfigError
from sandboxes.viewports import VIEWPORTS, parse_viewport, viewport_name


def test_names_and_sizes_parse() -> None:
    assert parse_viewport("phone") == (390, 844) == VIEWPORTS["phone"]
    assert parse_viewport(" Tablet ") == (768, 1024)
    assert parse_viewport("1280x720") == (1280, 720)
    assert viewport_name((390, 844)) == "phone" and viewport_name((1000, 700)) == "1000x700"


@pytest.mark.parametrize("text, says", [
    ("12x", "--viewport: expected WIDTHxHEIGHT in CSS pixels such as 390x844, or one of desktop, "
            "laptop, tablet, phone, got '12x'"),
    ("watch", "got 'watch'"),
    ("390*844", "got '390*844'"),
    ("-390x844", "got '-390x844'"),
    ("10x844", "--viewport: expected each side between 64 and 4096 pixels, got 10x844"),
    ("390x5000", "got 390x5000"),
])
def test_bad_viewports_say_what_is_expected(text: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_viewport(text)
    assert says in str(caught.value)


def test_the_caller_may_name_the_field_itself() -> None:
    with pytest.raises(ConfigError, match=r"^expected WIDTHxHEIGHT"):
        parse_viewport("12x", option=None)
