"""ctwm_cli.runtime.deferred: a module imported without its package's __init__, which runs at first use (issue 29).

Two halves: the mechanism on packages written here (the __init__ runs exactly once, at the first lookup
of a name it defines, under threads too, and fails as a failed import does), and the real thing in a
fresh process: the audit, bootstrap and numba included, never runs the __init__ of scipy.special,
scipy.optimize or scipy.linalg, and a later plain import of each gets the whole package -- the same
names as in a process that imported it plainly, the same ufunc objects, scipy.special's error state.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
import threading
import uuid
from types import ModuleType

import pytest

from ctwm_cli.runtime import deferred


@pytest.fixture
def make_package(tmp_path, monkeypatch):
    """A fresh package on sys.path: its __init__ records every run in ``sys.<name>_runs``."""
    monkeypatch.syspath_prepend(str(tmp_path))
    made: list[str] = []

    def make(init: str = "", children: dict[str, str] | None = None) -> str:
        name = "pkg_" + uuid.uuid4().hex[:10]
        root = tmp_path / name
        root.mkdir()
        (root / "__init__.py").write_text(
            f"import sys\nsys.{name}_runs = getattr(sys, {name + '_runs'!r}, 0) + 1\n" + init)
        for child, text in (children or {"child": "VALUE = 7\n"}).items():
            (root / f"{child}.py").write_text(text)
        made.append(name)
        return name

    yield make
    for name in made:
        for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            del sys.modules[key]
        if hasattr(sys, name + "_runs"):
            delattr(sys, name + "_runs")


def runs(name: str) -> int:
    return getattr(sys, name + "_runs", 0)


def test_the_child_is_imported_and_the_init_waits(make_package):
    name = make_package("def f():\n    return 'f'\n")
    child = deferred.submodule(f"{name}.child")
    assert child.VALUE == 7
    package = sys.modules[name]
    assert runs(name) == 0 and deferred.is_deferred(package)
    assert package.child is child  # the child is an attribute, as a plain import leaves it
    assert package.f() == "f"  # the first lookup of a name __init__ defines runs it
    assert runs(name) == 1 and not deferred.is_deferred(package)
    assert package.child is child and package.f() == "f"
    assert runs(name) == 1


def test_a_plain_import_afterwards_gets_the_same_module(make_package):
    name = make_package("X = 1\n__all__ = ['X']\n")
    child = deferred.submodule(f"{name}.child")
    namespace: dict = {}
    exec(f"from {name} import *", namespace)  # reads __all__: runs __init__
    assert namespace["X"] == 1 and runs(name) == 1
    exec(f"import {name}.child as again", namespace)
    assert namespace["again"] is child and runs(name) == 1


def test_dunder_lookups_do_not_run_the_init(make_package):
    name = make_package()
    deferred.submodule(f"{name}.child")
    package = sys.modules[name]
    assert not hasattr(package, "__wrapped__")
    assert package.__path__ and package.__spec__.name == name
    assert runs(name) == 0
    with pytest.raises(AttributeError):
        package.no_such_name  # noqa: B018  (runs __init__, then is missing all the same)
    assert runs(name) == 1


def test_threads_run_the_init_once(make_package):
    name = make_package("import time\ntime.sleep(0.2)\nREADY = True\n")
    deferred.submodule(f"{name}.child")
    package = sys.modules[name]
    seen: list[bool] = []
    threads = [threading.Thread(target=lambda: seen.append(package.READY)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [True] * 8 and runs(name) == 1


def test_a_failing_init_fails_like_an_import(make_package):
    name = make_package("raise RuntimeError('broken package')\n")
    deferred.submodule(f"{name}.child")
    with pytest.raises(RuntimeError, match="broken package"):
        sys.modules[name].anything  # noqa: B018
    assert name not in sys.modules  # as after a failed import: the next import raises again
    with pytest.raises(RuntimeError, match="broken package"):
        __import__(name)


def test_a_failed_init_leaves_no_attribute_on_the_parent(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    name = "outer_" + uuid.uuid4().hex[:10]
    (tmp_path / name / "inner").mkdir(parents=True)
    (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / name / "inner" / "__init__.py").write_text("raise KeyError('half built')\nY = 1\n")
    (tmp_path / name / "inner" / "child.py").write_text("")
    try:
        deferred.submodule(f"{name}.inner.child")
        with pytest.raises(KeyError):
            sys.modules[f"{name}.inner"].Y  # noqa: B018
        outer = sys.modules[name]
        assert "inner" not in vars(outer)  # so `from outer import inner` imports (and fails) again
        with pytest.raises(KeyError):
            exec(f"from {name} import inner", {})
    finally:
        for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            del sys.modules[key]


def test_dir_runs_the_init_and_reload_does_not_run_it_twice(make_package):
    name = make_package("X = 1\n")
    deferred.submodule(f"{name}.child")
    package = sys.modules[name]
    assert "X" in dir(package) and runs(name) == 1  # dir() is complete, not what is there so far
    name = make_package("Y = 2\n")
    deferred.submodule(f"{name}.child")
    package = importlib.reload(sys.modules[name])
    assert runs(name) == 1 and package.Y == 2 and runs(name) == 1


def test_threads_importing_across_two_deferred_packages_finish(make_package, tmp_path):
    """Thread 1 runs a's __init__, which imports a module m that thread 2 is importing, and m uses b:
    with plain imports this finishes, so it must with deferred ones (a lock of our own held during
    __init__ made this hang)."""
    b = make_package("B = 1\n")
    m = "mod_" + uuid.uuid4().hex[:10]
    (tmp_path / f"{m}.py").write_text(f"import time\ntime.sleep(0.3)\nimport {b}\nZ = {b}.B\n")
    a = make_package(f"import {m}\nA = 1\n")
    deferred.submodule(f"{a}.child")
    deferred.submodule(f"{b}.child")
    done: list[str] = []

    def second():
        importlib.import_module(m)
        done.append("m")

    def first():
        threading.Event().wait(0.1)
        done.append(str(sys.modules[a].A))

    threads = [threading.Thread(target=second, daemon=True), threading.Thread(target=first, daemon=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    try:
        assert sorted(done) == ["1", "m"]
    finally:
        sys.modules.pop(m, None)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_fork_during_another_packages_init_does_not_block_the_child(make_package):
    slow = make_package("import time\ntime.sleep(1.0)\nA = 1\n")
    other = make_package("B = 1\n")
    deferred.submodule(f"{slow}.child")
    deferred.submodule(f"{other}.child")
    threading.Thread(target=lambda: sys.modules[slow].A, daemon=True).start()
    threading.Event().wait(0.2)  # the slow __init__ is running in that thread now
    pid = os.fork()
    if pid == 0:  # the child: an unrelated deferred package must still initialise
        os._exit(0 if sys.modules[other].B == 1 else 1)
    for _ in range(100):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        threading.Event().wait(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung on a package unrelated to the running __init__")


def test_a_child_that_needs_its_package_gets_it(make_package):
    name = make_package("HELPER = 3\n", {"child": "from . import HELPER\nVALUE = HELPER * 2\n"})
    child = deferred.submodule(f"{name}.child")
    assert child.VALUE == 6 and runs(name) == 1


def test_a_missing_child_raises_and_leaves_a_whole_package(make_package):
    name = make_package("X = 1\n")
    with pytest.raises(ModuleNotFoundError):
        deferred.submodule(f"{name}.absent")
    assert sys.modules[name].X == 1 and runs(name) == 1


def test_an_imported_package_is_a_plain_import(make_package):
    name = make_package()
    package = __import__(name)
    assert runs(name) == 1
    child = deferred.submodule(f"{name}.child")
    assert sys.modules[name] is package and package.child is child and runs(name) == 1
    assert deferred.submodule("json") is json  # no package at all


def names(package) -> list[str]:
    """What a package's __init__ defines: its public names, without the submodules that other imports
    of the process happened to set as attributes."""
    return sorted(n for n in dir(package) if not n.startswith("_") and not isinstance(getattr(package, n), ModuleType))


PROBE = inspect.getsource(names) + """
import json, sys
from types import ModuleType
import numpy as np
from ctwm_cli import audit
r = audit(np.random.default_rng(1).zipf(2.2, 3000), bootstrap=20, seed=1, jobs=1)
from ctwm_cli.tail import kernels, special
assert kernels.compiled()  # the replicates loaded numba
out = {"after_audit": sorted(m for m in sys.modules if m in HEAVY)}
import scipy.special, scipy.optimize, scipy.linalg, scipy.stats
out["special"] = names(scipy.special)
out["optimize"] = names(scipy.optimize)
out["linalg"] = names(scipy.linalg)
import os
from scipy.special import _ufuncs
# the ufuncs themselves; scipy.special exports them as they are unless SCIPY_ARRAY_API is set (then it
# wraps them, and the wrappers hand numpy arrays to the same ufuncs)
out["same_objects"] = all(getattr(_ufuncs, n) is getattr(special, n) for n in special.__all__ if n != "cython_special")
if not os.environ.get("SCIPY_ARRAY_API"):
    out["same_objects"] &= all(getattr(scipy.special, n) is getattr(special, n) for n in special.__all__)
try:
    with scipy.special.errstate(singular="raise"):
        scipy.special.gammaln(0.0)
    out["errstate"] = "no error"
except scipy.special.SpecialFunctionError:
    out["errstate"] = "raised"
out["minimize_scalar"] = round(float(scipy.optimize.minimize_scalar(lambda v: (v - 1.5) ** 2).x), 6)
out["solve"] = scipy.linalg.solve([[2.0, 0.0], [0.0, 4.0]], [2.0, 2.0]).tolist()
out["norm_sf"] = float(scipy.stats.norm.sf(1.0))
print(json.dumps(out))
"""

#: modules that only the __init__ of scipy.special, scipy.optimize or scipy.linalg loads
HEAVY = ("scipy.special._basic", "scipy.special._support_alternative_backends", "scipy._lib._array_api",
         "numpy.f2py", "scipy.optimize._minimize", "scipy.linalg._basic", "scipy.stats")


def _probe(code: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", f"HEAVY = {HEAVY!r}\n" + code], capture_output=True,
                         text=True, env=env, check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def probed() -> dict:
    return _probe(PROBE)


def test_the_audit_runs_no_scipy_package_init(probed):
    assert probed["after_audit"] == []


def test_the_probe_sees_a_package_init():  # the check above can fail
    code = "import json, sys, scipy.special\nprint(json.dumps(sorted(m for m in sys.modules if m in HEAVY)))\n"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", f"HEAVY = {HEAVY!r}\n" + code], capture_output=True,
                         text=True, env=env, check=True, timeout=120)
    assert "scipy.special._support_alternative_backends" in json.loads(out.stdout)


def test_scipy_packages_end_up_whole(probed):
    import scipy.linalg
    import scipy.optimize
    import scipy.special

    # this process imported them plainly; the probe got them through the deferred path
    assert probed["special"] == names(scipy.special) and len(probed["special"]) > 300
    assert probed["optimize"] == names(scipy.optimize) and "minimize" in probed["optimize"]
    assert probed["linalg"] == names(scipy.linalg) and "solve" in probed["linalg"]
    assert probed["same_objects"] is True
    assert probed["errstate"] == "raised"
    assert probed["minimize_scalar"] == 1.5
    assert probed["solve"] == [1.0, 0.5]
    assert probed["norm_sf"] == pytest.approx(0.15865525393145707, rel=1e-15)
