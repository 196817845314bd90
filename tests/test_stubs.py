"""The type stubs: the compiled module's match what it exports (mypy.stubtest); the generated
ones (tools/gen_stubs.py) are up to date, name every declared op and pass mypy --strict."""

import ast
import builtins
import importlib.util
import pathlib
import subprocess
import sys


def test_stubs_core_module_matches_runtime():
    proc = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "rustgrad._core"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---- the generated stubs (tools/gen_stubs.py) -------------------------------------------
ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG = ROOT / "python" / "rustgrad"
STUBS = [PKG / "_tensor.pyi", PKG / "__init__.pyi", PKG / "nn" / "functional.pyi", PKG / "return_types.pyi"]
INDEX = PKG / "_ops" / "_index.py"  # generated with the stubs: the family of each lazily bound name


def _tool(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generated_stubs_are_up_to_date():
    files = _tool("gen_stubs").generate()
    assert sorted(files) == sorted(STUBS + [INDEX])
    stale = [str(p.relative_to(ROOT)) for p, text in files.items() if not p.exists() or p.read_text() != text]
    assert not stale, f"stale stubs {stale}: run `python tools/gen_stubs.py` and commit them"


def _defs(tree, cls=None):
    body = tree.body
    if cls is not None:
        body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
    out = {}
    for n in body:
        if isinstance(n, ast.FunctionDef):
            out.setdefault(n.name, []).append(n)
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            out.setdefault(n.target.id, []).append(n)
    return out


def test_stubs_name_every_declared_name_with_its_docstring():
    from rustgrad import _bind

    tensor = _defs(ast.parse((PKG / "_tensor.pyi").read_text()), "Tensor")
    namespace = _defs(ast.parse((PKG / "__init__.pyi").read_text()))
    functional = _defs(ast.parse((PKG / "nn" / "functional.pyi").read_text()))
    for d in _bind.declared():
        for names, where in ((d.method + d.dunder + d.prop, tensor), (d.function, namespace),
                             (d.functional, functional)):
            for name in names:
                assert name in where, f"{name} ({d.fn.__module__}.{d.name}) missing from the stubs"
                if d.doc:  # (a long line is wrapped)
                    docs = [" ".join((ast.get_docstring(f) or "").split()) for f in where[name]]
                    assert " ".join(d.doc.split()) in docs, (name, docs)
    props = {d.prop[0] for d in _bind.declared() if d.prop}
    assert {"T", "mT"} <= props
    assert all(any(isinstance(x, ast.Name) and x.id == "property" for x in tensor[p][0].decorator_list)
               for p in props)


SHADOWED = {n for n in dir(builtins) if isinstance(getattr(builtins, n), type)}


def test_stub_annotations_name_no_builtin_type_unqualified():
    # the namespace rebinds bool/int/float to dtypes and Tensor has methods of those names, so a
    # bare `int` in an annotation would mean the dtype or the method
    for path in STUBS:
        for node in ast.walk(ast.parse(path.read_text())):
            anns = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                anns = [x.annotation for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]
                        if x is not None] + [node.returns]
            elif isinstance(node, ast.AnnAssign):
                anns = [node.annotation]
            for ann in anns:
                for x in ast.walk(ann) if ann is not None else ():
                    assert not (isinstance(x, ast.Name) and x.id in SHADOWED), (
                        f"{path.name}:{x.lineno}: bare builtin `{x.id}` in an annotation")


def _bound_by_init():
    names = set()
    for top in ast.parse((PKG / "__init__.py").read_text()).body:
        # `if TYPE_CHECKING:` imports name what rustgrad._lazy_submodule binds on first use
        checking = isinstance(top, ast.If) and "TYPE_CHECKING" in ast.unparse(top.test)
        for node in top.body if checking else [top]:
            _bind_names(node, names)
    return {n for n in names if not n.startswith("_")}


def _bind_names(node: ast.stmt, names: set) -> None:
    if isinstance(node, ast.ImportFrom) and node.module != "__future__":
        names |= {a.asname or a.name for a in node.names}
    elif isinstance(node, ast.FunctionDef):
        names.add(node.name)


def test_package_all_is_what_init_binds_plus_the_declared_functions():
    import rustgrad

    assert len(rustgrad.__all__) == len(set(rustgrad.__all__))
    # submodules imported on first attribute use (rustgrad._lazy_submodule) are bound there
    lazy = set(rustgrad._LAZY_SUBMODULES)
    assert set(rustgrad.__all__) - lazy == _bound_by_init() | set(rustgrad._OP_NAMES)
    assert {"randn", "Tensor", "no_grad", "float32", "add", "nn", "optim"} <= set(rustgrad.__all__)
    stub_all = ast.literal_eval(next(
        n.value for n in ast.parse((PKG / "__init__.pyi").read_text()).body
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "__all__"))
    assert stub_all == list(rustgrad.__all__)


def test_stubs_pass_mypy_strict(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--cache-dir", str(tmp_path),
         *map(str, STUBS)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
