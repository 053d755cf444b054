"""The dependency rules of docs/architecture.md, checked on every module's imports:
`lib` never imports `cli`; `lib/drivers` and `lib/fabric` never import each other."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def violations(package: str, forbidden: tuple[str, ...]) -> list[str]:
    out = []
    for path in sorted((REPO / package).rglob("*.py")):
        for module in imported_modules(path):
            if any(module == f or module.startswith(f + ".") for f in forbidden):
                out.append(f"{path.relative_to(REPO)} imports {module}")
    return out


def test_lib_never_imports_cli():
    assert violations("lib", ("cli",)) == []


def test_drivers_never_import_the_fabric_package():
    assert violations("lib/drivers", ("lib.fabric",)) == []


def test_the_fabric_package_never_imports_drivers():
    assert violations("lib/fabric", ("lib.drivers",)) == []


def test_the_checker_sees_imports_inside_functions(tmp_path: Path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from lib.drivers.base import DriverError\n    import cli.main\n")
    assert {"lib.drivers.base", "cli.main"} <= imported_modules(module)
