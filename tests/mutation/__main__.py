"""Mutation testing of the rules users depend on (not part of the default test run).

    python -m tests.mutation [TARGET ...] [--max-children N] [--diffs] [--report-only]

Targets (tests/mutation/targets.py): hanging, abort, commit, producer-state, coordinator, share; none given:
all. For each, mutmut 3 mutates the target's functions in a staging tree (.mutation/TARGET, see staging.py) and runs the
target's fast tests against every mutant. Printed: the score per module (killed / mutants; a timeout counts
as killed), and every survivor, either with the reason it is equivalent (tests/mutation/equivalent.py) or,
when none is recorded, with its diff: kill it with a test, or record why no test can.
Each target's scores and survivors are also written to tests/mutation/results/TARGET.md (the last run's).
--report-only scores the staging trees of an earlier run again, without running mutmut.
Exit status 1 when a survivor is unexplained or a module scores below 90%.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tests.mutation.equivalent import reason_for
from tests.mutation.staging import REPO, module_of, stage, staged_path
from tests.mutation.targets import TARGETS, Source, Target, by_name

TARGET_SCORE = 0.90
# mutmut: test failure, pytest error, timeouts; 137: the test process exited as if killed (a mutant that
# fires the coordinator's exit-after-PREPARE_COMMIT fault hook on every commit ends the run that way)
KILLED = {1, 3, 24, -24, 36, 137, 152, 255}
SEPARATOR = "ǁ"


@dataclass
class Survivor:
    name: str
    function: str
    diff: str
    reason: str | None


@dataclass
class ModuleScore:
    path: str
    functions: tuple[str, ...] | None = None
    total: int = 0
    killed: int = 0
    survivors: list[Survivor] = field(default_factory=list)

    @property
    def score(self) -> float:
        return self.killed / self.total if self.total else 1.0


def function_of(mutant: str) -> str:
    """'pkg.mod.xǁClassǁmeth__getter__mutmut_3' -> 'Class.meth'; 'pkg.mod.x_func__mutmut_1' -> 'func'."""
    key = mutant.rsplit(".", 1)[1].rsplit("__mutmut_", 1)[0]
    if key.startswith("x" + SEPARATOR):
        _, cls, fn = key.split(SEPARATOR)
        name = f"{cls}.{fn}"
    else:
        name = key.removeprefix("x_")
    for suffix in ("__getter", "__setter"):
        name = name.removesuffix(suffix)
    return name


def _selected(source: Source, mutant: str) -> bool:
    return source.functions is None or function_of(mutant) in source.functions


def _patterns(target: Target) -> list[str]:
    """mutmut run's mutant filters: only the listed functions of a partly mutated file."""
    if all(s.functions is None for s in target.sources):
        return []
    out = []
    for source in target.sources:
        module = module_of(source.path)
        if source.functions is None:
            out.append(f"{module}.*")
            continue
        for fn in source.functions:
            cls, _, meth = fn.rpartition(".")
            key = f"x{SEPARATOR}{cls}{SEPARATOR}{meth}" if cls else f"x_{fn}"
            out.append(f"{module}.{key}__mutmut_*")
            if cls:
                out.append(f"{module}.{key}__[gs]etter__mutmut_*")
    return out


def _clean_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # check.sh's path would shadow the staged (mutated) packages
    env.pop("MUTANT_UNDER_TEST", None)
    return env


RESULTS = REPO / "tests" / "mutation" / "results"


def run_target(target: Target, root: Path, max_children: int, report_only: bool = False) -> list[ModuleScore]:
    if report_only:
        return [_score(root / target.name, source) for source in target.sources]
    where = stage(target, root, max_children)
    cmd = [sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children), *_patterns(target)]
    print(f"== {target.name}: {target.what}", flush=True)
    with open(where / "mutmut.log", "w") as out:
        done = subprocess.run(cmd, cwd=where, env=_clean_env(), stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        tail = (where / "mutmut.log").read_text()[-3000:]
        raise SystemExit(f"mutmut failed for {target.name} (exit {done.returncode}):\n{tail}")
    return [_score(where, source) for source in target.sources]


def _score(where: Path, source: Source) -> ModuleScore:
    meta = json.loads((where / "mutants" / (staged_path(source.path) + ".meta")).read_text())
    score = ModuleScore(source.path, source.functions)
    for name, code in sorted(meta["exit_code_by_key"].items(), key=lambda kv: _natural(kv[0])):
        if not _selected(source, name):
            continue
        score.total += 1
        if code in KILLED:
            score.killed += 1
            continue
        diff = _diff(where, name)
        score.survivors.append(Survivor(name, function_of(name), diff,
                                        reason_for(source.path, function_of(name), diff)))
    return score


def _natural(name: str) -> tuple[str, int]:
    head, _, n = name.rpartition("__mutmut_")
    return head, int(n) if n.isdigit() else 0


def _diff(where: Path, mutant: str) -> str:
    shown = subprocess.run([sys.executable, "-m", "mutmut", "show", mutant], cwd=where, env=_clean_env(),
                           capture_output=True, text=True, check=False)
    return "\n".join(line for line in shown.stdout.splitlines()
                     if line[:1] in "+-" and not line.startswith(("+++", "---")))


def write_results(target: Target, scores: list[ModuleScore]) -> Path:
    """The last run's scores and every survivor's change, for docs/contributing.md to point at."""
    lines = [f"# Mutation results: {target.name} ({target.what})", "",
             f"`python -m tests.mutation {target.name}`; tests run per mutant: " +
             ", ".join(f"`{t}`" for t in target.tests) + ".", "",
             "| module | mutants | killed | survived | score |", "|---|---|---|---|---|"]
    for s in scores:
        scope = "" if s.functions is None else f" ({len(s.functions)} functions)"
        lines.append(f"| `{s.path}`{scope} | {s.total} | {s.killed} | {len(s.survivors)} | {s.score:.1%} |")
    for s in scores:
        lines += ["", f"## Survivors in `{s.path}` ({len(s.survivors)})", ""]
        for v in s.survivors:
            change = " / ".join(line.strip() for line in v.diff.splitlines()).replace("|", "\\|")
            lines.append(f"- `{v.function}` ({v.name.rsplit('__mutmut_', 1)[1]}): `{change}`" +
                         (f"; equivalent: {v.reason}" if v.reason else ""))
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{target.name}.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def report(scores: Iterable[ModuleScore], diffs: bool) -> bool:
    ok = True
    rows = []
    for s in scores:
        explained = sum(1 for v in s.survivors if v.reason)
        rows.append(f"| `{s.path}` | {s.total} | {s.killed} | {len(s.survivors)} ({explained} equivalent) | "
                    f"**{s.score:.1%}** |")
        for v in s.survivors:
            change = " / ".join(line.strip() for line in v.diff.splitlines())
            if v.reason:
                print(f"  survivor {v.name}: {change}\n      equivalent: {v.reason}")
            else:
                ok = False
                print(f"  SURVIVOR {v.name} (no reason recorded): {change}")
                if diffs:
                    print("    " + v.diff.replace("\n", "\n    "))
        if s.score < TARGET_SCORE:
            ok = False
    print("\n| module | mutants | killed | survived | score |\n|---|---|---|---|---|")
    print("\n".join(rows))
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutation", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("targets", nargs="*", choices=[[], *[t.name for t in TARGETS]], metavar="TARGET",
                        help="one of: " + ", ".join(t.name for t in TARGETS) + " (default: all)")
    parser.add_argument("--max-children", type=int, default=2, help="mutants tested in parallel (default 2)")
    parser.add_argument("--root", type=Path, default=REPO / ".mutation", help="where the staging trees go")
    parser.add_argument("--diffs", action="store_true", help="print each unexplained survivor's whole diff")
    parser.add_argument("--report-only", action="store_true", help="score the staging trees of an earlier run")
    args = parser.parse_args(argv)
    chosen = [by_name(n) for n in args.targets] or list(TARGETS)
    scores = []
    for target in chosen:
        these = run_target(target, args.root, args.max_children, args.report_only)
        print(f"   results: {write_results(target, these).relative_to(REPO)}", flush=True)
        scores += these
    return 0 if report(scores, args.diffs) else 1


if __name__ == "__main__":
    sys.exit(main())
