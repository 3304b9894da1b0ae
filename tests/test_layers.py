"""The package layers (pyproject.toml, [tool.importlinter]) hold, and the check that
`make lint` runs does fail on an import that runs up a layer."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint(where: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(where / "pyproject.toml"), "--no-cache"],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(where)},
    )


def test_the_packages_keep_their_layers():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout


def test_an_import_up_a_layer_breaks_the_contract(tmp_path):
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(
        ROOT / "agent_broker",
        tmp_path / "agent_broker",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    # The ledger reaching up into the deals that use it.
    ledger = tmp_path / "agent_broker" / "ledger" / "books.py"
    ledger.write_text(ledger.read_text() + "\nfrom agent_broker.deals import service  # noqa\n")
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "agent_broker.ledger.books -> agent_broker.deals.service" in result.stdout


# What only the database layer and the features' repositories may use: services call
# named repository functions and never see how their statements travel.
SPEED_LAYER = ("Prepared", "saves_round_trips", ".queue(", ".later(", "agent_broker.db.libpq")


def test_prepared_statements_stay_in_db_and_repositories():
    package = ROOT / "agent_broker"
    offenders = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if relative.parts[0] in ("db", "migrations") or "repository" in path.stem:
            continue
        if relative.parts[:-1] and relative.parts[-2] == "repository":
            continue
        text = path.read_text()
        offenders += [f"{relative}: {name}" for name in SPEED_LAYER if name in text]
    assert offenders == []
