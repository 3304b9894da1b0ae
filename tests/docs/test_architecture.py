"""The contributors' architecture page shows the package layers as the import contract
(pyproject.toml, [tool.importlinter]) has them, and its layout names every package."""

from __future__ import annotations

import re
import tomllib

from tests.support.docs import PACKAGE, ROOT

ARCHITECTURE = ROOT / "docs" / "contributors" / "architecture.md"
LAYER_ROW = re.compile(r"^\| (\d+) \| (.+?) \| .*\|$", re.M)


def _contract_layers() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = config["tool"]["importlinter"]["contracts"]
    return [{name.strip() for name in layer.split("|")} for layer in contract["layers"]]


def test_the_layer_table_is_the_contract_in_order():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    rows = LAYER_ROW.findall(text)
    assert [int(number) for number, _ in rows] == list(range(1, len(rows) + 1))
    table = [set(re.findall(r"`([a-z_]+)`", packages)) for _, packages in rows]
    assert table == _contract_layers()


def test_the_layout_names_every_package():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    packages = {
        path.name for path in PACKAGE.iterdir() if path.is_dir() and (path / "__init__.py").exists()
    }
    missing = {name for name in packages if not re.search(rf"^  {name}/ ", text, re.M)}
    assert not missing, f"architecture.md's layout does not name {sorted(missing)}"
