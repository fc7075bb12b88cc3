"""``docs/options.md``: the option tables of every command whose options are declared (issue 43), generated from
the declarations (:func:`~.declared.option_table`); ``tests/test_declared_options.py`` fails when the page is stale.
Write it with ``python -c "from ctwm_cli.cli.options_page import options_page as p; print(p(), end='')" >
docs/options.md``.
"""

from __future__ import annotations

from .declared import option_table

INTRO = """# Options of the commands

Generated from the declarations (`ctwm_cli.cli.options_page`); `tests/test_declared_options.py` fails when this
page is stale. Each row is one field of a settings dataclass: its flag(s), default, choices, whether a
`ctwm.toml` entry may set it (in `[[check]] options`, under the flag's name in kebab or snake case; "no" says
why) and its help. The same fields generate the command's options, their checks and the errors that name the
flag. The output options (`--format`, `--json`, `--quiet`) and, where they are not in a table, `--plot`,
`--fail-on` and `--junit-xml` are shared by every command and never set by a config.

A library caller uses the same names: each settings class checks keywords spelled as the table's flags
(snake case) and says which one it did not know.

```python
from ctwm_cli.cli.replay_options import ReplaySettings
from ctwm_cli.cli.world_options import WorldSettings
from ctwm_cli.common.errors import UsageError

settings = ReplaySettings.checked(steps=500, episodes=2, tail_on="next")
config = settings.config(seed=1)
assert (config.steps, config.seeds, config.tail_on) == (500, (1, 2), "next")
world = WorldSettings.checked(steps=1000, walk="uniform-neighbour")
assert world.config(family="modular", size=100, retriever="state-frequency", seed=3).walk == "uniform-neighbour"
try:
    ReplaySettings.checked(episode=2)
except UsageError as exc:
    assert "did you mean 'episodes'?" in str(exc)
```
"""


def _section(title: str, parts: list[tuple[str, str, type]]) -> str:
    body = "".join(f"### {what} (`{where}`)\n\n{option_table(cls)}\n" for what, where, cls in parts)
    return f"## {title}\n\n{body}"


def options_page() -> str:
    """The page (see the module docstring)."""
    from ..common.settings import AuditRun, AuditSettings
    from .cmd_audit import AuditFlags
    from .cmd_health import HealthFlags
    from .cmd_simulate import SimulateSettings
    from .options import ReadFlags
    from .replay_options import CompareFlags, EncodingsFlags, FrozenFlags, ParetoFlags, ReplaySettings
    from .world_options import GridFlags, GridRun, LadderFlags, LadderRun, RunFlags, WorldSettings

    settings, cli = "ctwm_cli.common.settings", "ctwm_cli.cli"
    sections = [
        _section("`ctwm audit`", [
            ("The audit's settings", f"{settings}.AuditSettings", AuditSettings),
            ("How the audit runs", f"{settings}.AuditRun", AuditRun),
            ("The command's own options", f"{cli}.cmd_audit.AuditFlags", AuditFlags)]),
        _section("Reading the traces", [
            ("Shared by every command that reads one", f"{cli}.options.ReadFlags", ReadFlags)]),
        _section("`ctwm health`", [
            ("Besides the reading options", f"{cli}.cmd_health.HealthFlags", HealthFlags)]),
        _section("`ctwm simulate`", [
            ("Besides the reading options, --plot, --fail-on and --junit-xml",
             f"{cli}.cmd_simulate.SimulateSettings", SimulateSettings)]),
        _section("`ctwm replay`", [
            ("Every replay command's (pareto: not --out, --overwrite; its own --budget, --plot)",
             f"{cli}.replay_options.ReplaySettings", ReplaySettings),
            ("`ctwm replay` without a subcommand", f"{cli}.replay_options.EncodingsFlags", EncodingsFlags),
            ("`ctwm replay compare`", f"{cli}.replay_options.CompareFlags", CompareFlags),
            ("`ctwm replay pareto`", f"{cli}.replay_options.ParetoFlags", ParetoFlags),
            ("`ctwm replay frozen` (none of the shared ones)", f"{cli}.replay_options.FrozenFlags", FrozenFlags)]),
        _section("`ctwm world`", [
            ("Every world command's (ladder: not --writes/--no-writes)", f"{cli}.world_options.WorldSettings",
             WorldSettings),
            ("`ctwm world run`", f"{cli}.world_options.RunFlags", RunFlags),
            ("`ctwm world grid`: what it runs", f"{cli}.world_options.GridFlags", GridFlags),
            ("`ctwm world grid`: how it runs", f"{cli}.world_options.GridRun", GridRun),
            ("`ctwm world ladder`: what it runs", f"{cli}.world_options.LadderFlags", LadderFlags),
            ("`ctwm world ladder`: how it runs", f"{cli}.world_options.LadderRun", LadderRun)]),
    ]
    return (INTRO + "\n" + "".join(sections)).rstrip("\n") + "\n"
