"""Write agent_broker_client/models.py from the service's OpenAPI document.

Run from the repository's root in the server's environment (it builds the service's app,
with a throwaway var folder, to read its document; datamodel-code-generator comes with the
server's `dev` extra):

    python clients/python/generate.py          # rewrite models.py
    python clients/python/generate.py --check  # exit 1 if models.py is not up to date

tests/client/test_client_models.py runs the check, so the client cannot drift from the
service."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

MODELS = Path(__file__).resolve().parent / "agent_broker_client" / "models.py"
HEADER = (
    '"""The service\'s request and response models, generated from its /openapi.json by\n'
    'clients/python/generate.py (datamodel-code-generator). Do not edit: regenerate."""'
)


def openapi_document() -> dict[str, Any]:
    """The document the service serves at /openapi.json, as the defaults configure it
    (BROKER_* variables of the environment set aside, so every run gives the same)."""
    from agent_broker.app import create_app
    from agent_broker.config import Settings

    aside = {name: os.environ.pop(name) for name in list(os.environ) if name.startswith("BROKER_")}
    try:
        with tempfile.TemporaryDirectory() as var:
            settings = Settings(_env_file=None, var_dir=var, database_url="", jobs_enabled=False)
            app = create_app(settings, run_jobs=False)
            try:
                return app.openapi()
            finally:
                app.state.context.db.dispose()
    finally:
        os.environ.update(aside)


def _without_email_format(node: Any) -> Any:
    """`node` with `"format": "email"` dropped: the service checks addresses itself, and
    pydantic's EmailStr would make the client depend on email-validator."""
    if isinstance(node, dict):
        return {
            key: _without_email_format(value)
            for key, value in node.items()
            if not (key == "format" and value in ("email", "idn-email"))
        }
    if isinstance(node, list):
        return [_without_email_format(value) for value in node]
    return node


def models_source(document: dict[str, Any]) -> str:
    """models.py for `document`: pydantic v2 models of its component schemas."""
    from datamodel_code_generator import (
        DataModelType,
        InputFileType,
        PythonVersion,
        generate,
    )
    from datamodel_code_generator.format import Formatter

    with warnings.catch_warnings():
        # Notices of the generator's future defaults; the formatters are chosen below.
        warnings.simplefilter("ignore", FutureWarning)
        source = generate(
            json.dumps(_without_email_format(document), sort_keys=True),
            input_file_type=InputFileType.OpenAPI,
            output_model_type=DataModelType.PydanticV2BaseModel,
            target_python_version=PythonVersion.PY_311,
            disable_timestamp=True,
            custom_file_header=HEADER,
            use_standard_collections=True,
            use_union_operator=True,
            use_schema_description=True,
            use_double_quotes=True,
            formatters=[Formatter.BLACK, Formatter.ISORT],
        )
    assert isinstance(source, str), "one module expected"
    return source


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="Report a difference instead of writing."
    )
    arguments = parser.parse_args(argv)
    source = models_source(openapi_document())
    if arguments.check:
        current = MODELS.read_text() if MODELS.exists() else ""
        if current != source:
            print(f"{MODELS} differs from the service's models: regenerate it", file=sys.stderr)
            return 1
        return 0
    MODELS.write_text(source)
    return 0


if __name__ == "__main__":
    sys.exit(main())
