"""The package installs and the CI recipes run, as a user would meet them.

* The wheel built by ``python -m build --wheel`` installs into a fresh virtual environment, with every
  dependency resolved by pip (under PIP_CONSTRAINT when CI sets it), and its ``ctwm --version`` runs there.
* The composite GitHub Action (action.yml) and the GitLab job (ci/gitlab-ctwm.yml) are executed step by step: their
  YAML is read, ``${{ inputs.* }}`` / ``${{ github.action_path }}`` and the GitLab variables are put in, and each
  ``run:`` step or script line runs in bash (as the runners do: ``bash -eo pipefail``) in a temporary repository
  holding a ctwm.toml and a trace. Each installs ctwm from this repository (the Action from its own directory, the
  GitLab job by ``git+file://`` at this commit) and runs ``ctwm check``: exit 0 on a passing gate, 1 on a failing one.

The recipes install into the virtual environment the wheel test made (the Action's ``$RUNNER_TEMP/ctwm-venv``, the
job's ``$CTWM_VENV``), so they rebuild and reinstall ctwm itself but find its dependencies there; a full install
from nothing is what the wheel test measures. ``actions/setup-python`` is the one step not run: the Python running
these tests stands in for it. pip's record of where it installed ctwm from (direct_url.json) shows which source
each step installed. Slow: pip, and the build backend from the index.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

from ctwm_cli import __version__  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

CONFIG = """\
[[check]]
name = "reads are concentrated"
command = "concentration"
traces = ["traces/*.parquet"]
fail_on = ["gini{op}"]
"""
TRACE = ROOT / "sample_traces" / "tpl_events.parquet"  # Gini 0.74
PASSING, FAILING = ">0.99", ">0.5"


def _env(**extra: str) -> dict[str, str]:
    """This process's environment without what would make the checkout's ctwm_cli importable or pick a venv."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME") and not k.startswith(("CTWM_", "GITHUB_"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env | extra


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)


def _origin(venv: Path) -> dict:
    """Where pip installed the venv's ctwm from (its PEP 610 direct_url.json)."""
    code = "import importlib.metadata as m; print(m.distribution('ctwm').read_text('direct_url.json'))"
    out = _run([str(venv / "bin" / "python"), "-c", code], env=_env(), cwd=venv)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv (``<dir>/ctwm-venv``) with the wheel of this checkout installed; returns ``<dir>``, with the
    wheel's file name in ``<dir>/wheel-origin.json`` (pip's record, before the recipes reinstall ctwm there)."""
    base = tmp_path_factory.mktemp("install")
    dist = base / "dist"
    build = _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)], env=_env())
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    (wheel,) = dist.glob("ctwm-*.whl")
    venv = base / "ctwm-venv"
    made = _run([sys.executable, "-m", "venv", str(venv)], env=_env())
    assert made.returncode == 0, made.stderr
    pip = _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                "--no-compile", str(wheel)], env=_env(), cwd=base)
    assert pip.returncode == 0, pip.stdout[-2000:] + pip.stderr[-2000:]
    (base / "wheel-origin.json").write_text(json.dumps(_origin(venv)))
    return base


def test_the_built_wheel_installs_into_a_fresh_venv_and_runs(installed):
    venv = installed / "ctwm-venv"
    out = _run([str(venv / "bin" / "ctwm"), "--version"], env=_env(), cwd=installed)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"ctwm {__version__}"
    where = _run([str(venv / "bin" / "python"), "-c", "import ctwm_cli; print(ctwm_cli.__file__)"], env=_env(),
                 cwd=installed)
    assert Path(where.stdout.strip()).is_relative_to(venv)  # the wheel's copy, not this checkout's
    origin = json.loads((installed / "wheel-origin.json").read_text())
    assert origin["url"].endswith(f"/ctwm-{__version__}-py3-none-any.whl") and "archive_info" in origin


def _repository(base: Path, op: str) -> Path:
    """A project to audit: a ctwm.toml with one concentration gate (fail when Gini ``op``) and a trace."""
    repo = base / f"repo{len(list(base.glob('repo*')))}"
    (repo / "traces").mkdir(parents=True)
    (repo / "ctwm.toml").write_text(CONFIG.format(op=op))
    (repo / "traces" / TRACE.name).write_bytes(TRACE.read_bytes())
    return repo


_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def _action_steps(inputs: dict[str, str]) -> tuple[list[dict], dict[str, str]]:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    unknown = set(inputs) - set(action["inputs"])
    assert not unknown, f"not inputs of action.yml: {unknown}"
    values = {f"inputs.{k}": str(v.get("default", "")) for k, v in action["inputs"].items()}
    values |= {f"inputs.{k}": v for k, v in inputs.items()}
    values["github.action_path"] = str(ROOT)
    return action["runs"]["steps"], values


def _sub(text: str, values: dict[str, str]) -> str:
    def one(m):
        assert m.group(1) in values, f"action.yml uses ${{{{ {m.group(1)} }}}}, which this test does not provide"
        return values[m.group(1)]

    return _EXPR.sub(one, str(text))


def _condition(expr: str, values: dict[str, str]) -> bool:
    m = re.fullmatch(r"inputs\.([\w-]+) != ''", expr.strip())
    assert m, f"an `if:` this test cannot evaluate: {expr}"
    return values[f"inputs.{m.group(1)}"] != ""


def run_action(workspace: Path, runner_temp: Path, **inputs: str) -> list[tuple[str, int, str]]:
    """Run action.yml's steps as the runner would: (name, exit code, stdout+stderr) of each step run, stopping at
    the first that fails. ``$GITHUB_PATH`` lines are put on PATH for the steps after."""
    steps, values = _action_steps(inputs)
    files = {k: runner_temp / f"{k.lower()}-{workspace.name}" for k in ("GITHUB_PATH", "GITHUB_ENV", "GITHUB_OUTPUT")}
    for f in files.values():
        f.write_text("")
    ran = []
    for i, step in enumerate(steps):
        if "if" in step and not _condition(step["if"], values):
            continue
        if "uses" in step:
            assert step["uses"].startswith("actions/setup-python@"), step["uses"]
            continue
        assert step.get("shell") == "bash", "every run step of a composite action names its shell"
        env = _env(RUNNER_TEMP=str(runner_temp), GITHUB_WORKSPACE=str(workspace), GITHUB_ACTION_PATH=str(ROOT),
                   **{k: str(v) for k, v in files.items()})
        env |= {k: _sub(v, values) for k, v in (step.get("env") or {}).items()}
        added = [p for p in files["GITHUB_PATH"].read_text().splitlines() if p]
        env["PATH"] = os.pathsep.join([*reversed(added), env["PATH"]])
        script = runner_temp / f"step{i}-{workspace.name}.sh"
        script.write_text(_sub(step["run"], values))
        cwd = workspace / _sub(step.get("working-directory", "."), values)
        out = _run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], env=env, cwd=cwd)
        ran.append((step["name"], out.returncode, out.stdout + out.stderr))
        if out.returncode:
            break
    return ran


@pytest.mark.parametrize(("op", "code"), [(PASSING, 0), (FAILING, 1)], ids=["passing-gate", "failing-gate"])
def test_the_github_action_installs_ctwm_from_its_repository_and_runs_the_check(installed, op, code):
    repo = _repository(installed, op)
    ran = run_action(repo, installed, args="--format json --junit-xml ctwm-junit.xml")
    names = [name for name, _, _ in ran]
    assert names == ["Install ctwm from the action's repository", "ctwm check"], ran
    assert ran[0][1] == 0 and f"ctwm {__version__} installed from {ROOT}" in ran[0][2], ran[0][2][-2000:]
    assert _origin(installed / "ctwm-venv") == {"dir_info": {}, "url": ROOT.as_uri()}  # built from the action's dir
    _, rc, out = ran[1]
    assert rc == code, out[-2000:]
    report = json.loads(out[out.index("{"):out.rindex("}") + 1])
    assert [(e["check"], e["status"]) for e in report["entries"]] == [
        ("reads are concentrated", "pass" if code == 0 else "fail")]
    assert report["checks"][0]["observed"] == pytest.approx(0.7435, abs=1e-4)
    assert (repo / "ctwm-junit.xml").exists()


def test_the_github_action_refuses_a_version_its_ref_does_not_install(tmp_path):
    repo = _repository(tmp_path, PASSING)
    ran = run_action(repo, tmp_path, version="9.9.9", config="ctwm.toml")
    assert [(name, rc) for name, rc, _ in ran] == [("Install ctwm from the action's repository", 2)]
    assert f"version: 9.9.9 was asked for, but this action's ref installs ctwm {__version__}" in ran[0][2]


def run_gitlab_job(workspace: Path, **variables: str) -> subprocess.CompletedProcess:
    """Run ci/gitlab-ctwm.yml's job script in one bash session (as GitLab's shell executor does), its variables
    expanded against the job's environment and overridden by ``variables``."""
    jobs = yaml.safe_load((ROOT / "ci" / "gitlab-ctwm.yml").read_text())
    assert jobs["ctwm-check"]["extends"] == ".ctwm-check"
    job = jobs[".ctwm-check"]
    env = _env(CI_PROJECT_DIR=str(workspace))
    for k, v in {**job["variables"], **variables}.items():
        env[k] = re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), m.group(0)), str(v))
    script = workspace / "gitlab-job.sh"
    script.write_text("\n".join(job["script"]) + "\n")
    return _run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], env=env, cwd=workspace)


def _this_commit() -> str:
    out = _run(["git", "-C", str(ROOT), "rev-parse", "HEAD"])
    if out.returncode:
        pytest.skip("not a git checkout: the GitLab job installs from a Git repository")
    return out.stdout.strip()


@pytest.mark.parametrize(("op", "code"), [(PASSING, 0), (FAILING, 1)], ids=["passing-gate", "failing-gate"])
def test_the_gitlab_job_installs_ctwm_from_the_repository_and_runs_the_check(installed, op, code):
    repo = _repository(installed, op)
    commit = _this_commit()
    # a URL with a host, as real ones have: the pip of Python 3.11's ensurepip (23.2) rejects a host-less
    # git+file:/// URL in a `name @ url` requirement
    url = f"file://localhost{ROOT}"
    out = run_gitlab_job(repo, CTWM_GIT_URL=url, CTWM_REF=commit, CTWM_VENV=str(installed / "ctwm-venv"))
    assert f"ctwm {__version__}\n" in out.stdout, out.stderr[-2000:]  # installed: `ctwm --version` ran
    assert out.returncode == code, out.stdout[-2000:] + out.stderr[-2000:]
    origin = _origin(installed / "ctwm-venv")
    assert (origin["url"], origin["vcs_info"]["vcs"], origin["vcs_info"]["commit_id"]) == (url, "git", commit)
    junit = (repo / "ctwm-junit.xml").read_text()
    assert 'name="ctwm check: reads are concentrated"' in junit
    assert ('failures="1"' in junit) == (code == 1)


def test_the_gitlab_job_names_the_variable_it_needs(tmp_path):
    out = run_gitlab_job(tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip() == "ctwm: set CTWM_GIT_URL to the ctwm repository to install from"
