"""The shape of the language core (STYLE.md): the model imports no serializer, imports sit at
the top of each module, and a constraint is printed by functions, not by its own methods."""

import ast
from pathlib import Path

import matching

CORE = Path(matching.__file__).parent
CORE_MODULES = sorted(CORE.glob("*.py"))


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]


def test_the_core_has_the_modules_the_test_reads():
    names = {p.name for p in CORE_MODULES}

    assert {"model.py", "printer.py", "jsonform.py", "parser.py", "lexer.py"} <= names


def test_the_model_imports_nothing_of_the_language():
    tree = ast.parse((CORE / "model.py").read_text())

    relative = [n.module for n in _imports(tree) if isinstance(n, ast.ImportFrom) and n.level]

    assert relative == []


def test_every_core_import_is_at_module_level():
    nested = []
    for path in CORE_MODULES:
        tree = ast.parse(path.read_text())
        top = {id(n) for n in tree.body}
        top |= {  # imports under a module-level `if TYPE_CHECKING:`
            id(n) for stmt in tree.body if isinstance(stmt, ast.If) for n in stmt.body
        }
        nested += [f"{path.name}:{n.lineno}" for n in _imports(tree) if id(n) not in top]

    assert nested == []


def test_a_constraint_is_printed_by_the_package_functions():
    constraint = matching.parse("lot >= 10")

    assert not hasattr(constraint, "to_text")
    assert not hasattr(constraint, "to_json")
    assert matching.to_text(constraint) == "lot >= 10"
    assert matching.to_json(constraint) == {"any_of": [{"int lot": {"ge": 10}}]}
