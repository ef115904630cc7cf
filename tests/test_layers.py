"""The package's shape: stages import only stages below them, and no module grows past a
screenful of screens. ARCHITECTURE.md draws the same order."""

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "memd"

# Lowest first. A module may import its own stage and any stage listed before it.
# The top-level modules are the public face: the base everyone uses, the facade above the
# stages it fronts, the client beside it, and the package itself at the very top.
ORDER = [
    {
        "memd.errors",
        "memd.records",
        "memd.config",
        "memd.configfile",
        "memd.log",
        "memd.configpath",
    },
    {"memd.sources"},
    {"memd.embed"},
    {"memd.store"},
    {"memd.index"},
    {"memd.search"},
    {"memd.write"},
    {"memd.review"},
    {"memd.memory", "memd.client", "memd.socketcache"},
    {"memd.agent"},
    {"memd.ui"},
    {"memd.serve"},
    {"memd.cli"},
    {"memd", "memd.__main__"},
]
# Stages that sit on the same floors but never meet: search reads what indexing wrote only
# through the store, and writing indexes what it wrote but never searches.
APART = {("memd.search", "memd.index"), ("memd.write", "memd.search")}
MAX_LINES = 400


def unit(module: str) -> str:
    """The stage a module belongs to: its subpackage, or itself at the top level."""
    parts = module.split(".")
    return ".".join(parts[:2])


def level(module: str) -> int:
    if module == "memd.__version__":  # set first thing in memd/__init__.py, imports nothing
        return 0
    name = unit(module)
    for i, units in enumerate(ORDER):
        if name in units:
            return i
    raise AssertionError(f"{module} is in no stage of ORDER: add it to the right one")


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(name: str, path: Path) -> set[str]:
    """Every memd module ``path`` imports, at any depth of the file (lazy imports count)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "memd"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if base.split(".")[0] != "memd":
                continue
            if base == "memd" or node.module is None:
                out |= {f"{base}.{a.name}" for a in node.names}
            else:
                out.add(base)
    return out


def test_every_module_belongs_to_a_stage():
    for name in modules():
        level(name)


def test_imports_run_down_the_stages():
    upward = []
    for name, path in modules().items():
        for target in imports(name, path):
            if level(target) > level(name) or (unit(name), unit(target)) in APART:
                upward.append(f"{name} imports {target}")
    assert not upward, "imports that run up the stages:\n" + "\n".join(sorted(upward))


def test_no_two_stages_import_each_other():
    arrows = {
        (unit(name), unit(target))
        for name, path in modules().items()
        for target in imports(name, path)
        if unit(target) != unit(name) and target != "memd.__version__"
    }
    both = sorted(f"{a} <-> {b}" for a, b in arrows if (b, a) in arrows and a < b)
    assert not both, "stages that import each other:\n" + "\n".join(both)


def test_no_module_imports_itself_in_a_circle():
    graph = {name: imports(name, path) & set(modules()) for name, path in modules().items()}
    seen: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, trail: list[str]) -> list[str] | None:
        seen[name] = 1
        for target in sorted(graph[name]):
            if target == "memd" or target.startswith(name + "."):
                continue  # a package's __init__ and its own modules are not a circle
            if seen.get(target) == 1:
                return [*trail, name, target]
            if target not in seen and (circle := visit(target, [*trail, name])):
                return circle
        seen[name] = 2
        return None

    for name in sorted(graph):
        if name not in seen and (circle := visit(name, [])):
            raise AssertionError("import circle: " + " -> ".join(circle))


def test_no_module_is_over_400_lines():
    long = {
        str(path.relative_to(PACKAGE.parent)): n
        for path in modules().values()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


SQL = re.compile(
    r"\b(apsw|sqlite3|SELECT \S.* FROM|INSERT (OR \w+ )?INTO|DELETE FROM|UPDATE \w+ SET)\b"
)


def test_only_the_store_speaks_sql():
    """apsw, and SQL of any kind, stay behind the storage seam."""
    outside = sorted(
        f"{name}: {m[0]}"
        for name, path in modules().items()
        if unit(name) != "memd.store" and (m := SQL.search(path.read_text(encoding="utf-8")))
    )
    assert not outside, f"SQL outside memd/store: {outside}"
    assert SQL.search('db.execute("SELECT id FROM chunks")')  # the pattern itself works


def test_the_checker_sees_an_upward_import(tmp_path):
    """The checker itself: a store module importing search is caught."""
    path = tmp_path / "bad.py"
    path.write_text("from memd.search.ranking import fuse\nfrom . import fts\n")
    found = imports("memd.store.bad", path)
    assert found == {"memd.search.ranking", "memd.store.fts"}
    assert level("memd.search.ranking") > level("memd.store.bad")
