"""The README stays a landing page: short, with its first session and links by audience."""

from __future__ import annotations

from tests.support.docs import ROOT


def test_the_readme_is_under_250_lines():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 250, f"README.md has {len(lines)} lines; move detail under docs/"


def test_the_readme_links_each_audience_and_marks_its_first_session():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for page in (
        "docs/agents/README.md",
        "docs/operators/README.md",
        "docs/contributors/README.md",
    ):
        assert f"]({page})" in text
    assert "<!-- first-session:" in text and "docs/examples/first-session.sh" in text
