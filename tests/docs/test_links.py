"""Every relative link in README.md and under docs/ points at a file that exists."""

from __future__ import annotations

import pytest

from tests.support.docs import ROOT, markdown_documents, relative_links


@pytest.mark.parametrize("path", markdown_documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path):
    broken = [
        f"line {number}: {target}"
        for number, target in relative_links(path)
        if target and not (path.parent / target).exists()
    ]
    assert not broken, f"{path.relative_to(ROOT)}: " + ", ".join(broken)


def test_the_link_scan_sees_links_and_images_but_not_code(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "See [a](a.md#part), ![b](img/b.png) and [web](https://example.com).\n"
        "`[not](code.md)`\n```\n[not](fenced.md)\n```\n[self](#top)\n"
    )
    assert [target for _, target in relative_links(page)] == ["a.md", "img/b.png"]
