"""Every `cua` command answers a user's mistake with one line naming what was wrong, a
non-zero exit, and nothing left behind (each case in a process of its own).

Mistakes: a suite, site, agent, format or codec that does not exist; an output path that
is a file, lies under a file, or cannot be written (root writes anywhere a permission bit
forbids, so "unwritable" is a place under /proc, where nothing can be created); a store
that is damaged each way a disk or a person damages one.

Importing the CLI costs most of a second of CPU, so the cases run in processes forked
from one that imported it (they call the console script's ``harness.cli.main``); a few
run through the console script itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.store.helpers import DAMAGE, damage_store, filled_store, folder_bytes

CUA = Path(sys.executable).parent / "cua"
UNWRITABLE = "/proc/cua-test/out"
DAMAGE_SAYS = {"empty": "an empty file beside existing blobs", "not_sqlite": "not one",
               "truncated": "it was truncated", "overwritten": "SQLITE_CORRUPT"}
SUITE = "miniwob:click-test"
#: commands whose output is one file (overwriting a file is no mistake; a folder is)
FILE_WRITERS = ("tasks", "sites-synth")


def _cases() -> list[tuple[str, list[str], str]]:
    """(id, arguments, a fragment the error must contain). Output names are unique per
    case, so that anything left behind points at its command."""
    cases = [
        ("eval-suite", ["eval", "--suite", "fsm:shp", "--out", "o1"], "'shp'"),
        ("eval-suite-prefix", ["eval", "--suite", "nosuch:x", "--out", "o2"], "nosuch"),
        ("eval-codec", ["eval", "--suite", SUITE, "--codec", "qwen2", "--out", "o3"], "qwen2"),
        ("eval-agent", ["eval", "--suite", SUITE, "--agent", "genius", "--out", "o4"], "genius"),
        ("eval-provider", ["eval", "--suite", SUITE, "--provider", "dockr", "--out", "o5"],
         "did you mean 'docker'"),
        ("eval-docker-arg", ["eval", "--suite", SUITE, "--provider", "docker:cpus", "--out", "o6"],
         "key=value"),
        ("eval-sandbox", ["eval", "--suite", SUITE, "--sandbox", "phone", "--out", "o7"], "phone"),
        ("eval-sandbox-kind", ["eval", "--suite", SUITE, "--sandbox", "desktop", "--out", "o8"],
         "need another kind"),
        ("eval-viewport", ["eval", "--suite", SUITE, "--viewport", "12x", "--out", "o9"],
         "--viewport (viewport): expected WIDTHxHEIGHT in CSS pixels such as 390x844"),
        ("eval-task-viewport", ["eval", "--suite", "fsm:shop@watch", "--out", "o10"],
         "the viewport after '@': expected WIDTHxHEIGHT"),
        ("sites-gallery-family", ["sites", "gallery", "--families", "material,carbon", "--out", "g1"],
         "expected theme families (material, bootstrap, shadcn, fluent, enterprise) or all"),
        ("sites-gallery-viewport", ["sites", "gallery", "--viewports", "phone,99999x1", "--out", "g2"],
         "--viewports (viewports): expected each side between 64 and 4096"),
        ("collect-suite", ["collect", "--suite", "fsm:shp", "--store", "c1"], "'shp'"),
        ("collect-codec", ["collect", "--suite", "fsm:shop", "--store", "c2", "--codec", "qwen2"],
         "--codec"),
        ("stats-missing", ["store", "stats", "nostore"], "nostore"),
        ("stats-file", ["store", "stats", "afile"], "afile"),
        ("export-format", ["store", "export", "store", "--format", "DPO", "--out", "x1"], "DPO"),
        ("export-codec", ["store", "export", "store", "--format", "dpo", "--codec", "qwen2",
                          "--out", "x2"], "qwen2"),
        ("export-missing", ["store", "export", "nostore", "--format", "sft", "--out", "x3"],
         "nostore"),
        ("view-missing", ["view", "nostore", "--out", "v1"], "nostore"),
        ("tasks-site", ["tasks", "synth", "--site", "shp", "--out", "t1.jsonl"], "'shp'"),
        ("tasks-spec", ["tasks", "synth", "--site", "bad_spec.yaml", "--out", "t2.jsonl"],
         "bad_spec.yaml"),
        ("sites-list-option", ["sites", "list", "--format", "x"], "--format"),
        ("sites-validate-missing", ["sites", "validate", "nospec.yaml"], "nospec.yaml"),
        ("sites-validate-folder", ["sites", "validate", "store"], "folder"),
        ("sites-synth-difficulty", ["sites", "synth", "--difficulty", "hardest", "--out", "s1.yaml"],
         "hardest"),
        ("sites-serve-site", ["sites", "serve", "shp"], "'shp'"),
        ("sites-path-site", ["sites", "path", "shp", "checkout"], "'shp'"),
        ("sites-path-goal", ["sites", "path", "shop", "chekout"], "'chekout'"),
        ("sites-serve-port", ["sites", "serve", "shop", "--port", "99999"], "--port"),
        ("serve-no-model", ["serve"], "the MODEL argument (model): field required"),
    ]
    writers = {  # command -> its arguments with the output path last
        "eval": ["eval", "--suite", SUITE, "--out"], "eval-store": ["eval", "--suite", SUITE, "--store"],
        "collect": ["collect", "--suite", "fsm:shop", "--store"],
        "export": ["store", "export", "store", "--format", "sft", "--out"],
        "view": ["view", "store", "--out"], "tasks": ["tasks", "synth", "--site", "shop", "--out"],
        "sites-synth": ["sites", "synth", "--out"], "demo": ["demo", "--out"],
    }
    for name, args in writers.items():
        wrong_kind = "store" if name in FILE_WRITERS else "afile"  # a folder where a file goes
        cases += [(f"{name}-out-is-{'folder' if name in FILE_WRITERS else 'file'}",
                   [*args, wrong_kind], wrong_kind),
                  (f"{name}-out-under-file", [*args, "afile/sub"], "afile"),
                  (f"{name}-out-unwritable", [*args, f"{UNWRITABLE}/{name}"], "/proc")]
    readers = {"stats": ["store", "stats"], "export": ["store", "export"],
               "view": ["view"], "collect": ["collect", "--suite", "fsm:shop", "--store"],
               "eval": ["eval", "--suite", SUITE, "--out", "o-damaged", "--store"]}
    for name, args in readers.items():
        for kind in DAMAGE:
            extra = {"export": ["--format", "sft", "--out", f"x-{kind}", "--steps", "all"],
                     "view": ["--out", f"v-{kind}"]}.get(name, [])
            cases.append((f"{name}-store-{kind}", [*args, f"damaged_{kind}", *extra],
                          f"damaged_{kind}/store.sqlite"))
    return cases


CASES = _cases()


#: Imports the CLI once, then runs each case in a forked child with its own argv, its
#: stdout and stderr in one pipe, and reports (exit status, output) per case as JSON.
DRIVER = r"""
import json, os, sys, traceback
import harness.cli

results = {}
for name, args in json.loads(sys.stdin.read()):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        os.dup2(write, 1)
        os.dup2(write, 2)
        sys.argv = ["cua", *args]
        code = 0
        try:
            harness.cli.main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    results[name] = [status, b"".join(chunks).decode(errors="replace")]
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("cli")
    (work / "afile").write_text("a regular file\n")
    (work / "bad_spec.yaml").write_text("name: broken\npages: 3\n")
    filled_store(work / "store", episodes=4)
    for kind in DAMAGE:
        damage_store(filled_store(work / f"damaged_{kind}", episodes=4), kind)
    return work


@pytest.fixture(scope="module")
def results(work) -> tuple[dict[str, tuple[int, str]], dict, dict]:
    """Every case run once, in ``work``; the folder's files before and after."""
    before = folder_bytes(work)
    cases = json.dumps([(name, args) for name, args, _ in CASES])
    proc = subprocess.run([sys.executable, "-c", DRIVER], input=cases, cwd=work,
                          capture_output=True, text=True, timeout=600, check=True)
    return json.loads(proc.stdout), before, folder_bytes(work)


@pytest.mark.parametrize(("case", "args", "says"), CASES, ids=[c[0] for c in CASES])
def test_a_mistake_is_one_line_and_a_non_zero_exit(results, case, args, says):
    status, output = results[0][case]
    output = output.strip()
    assert status != 0, output
    assert output.startswith("error: ") and "\n" not in output, output
    assert says in output, output


def test_no_mistake_leaves_anything_behind(results):
    _, before, after = results
    created = sorted(set(after) - set(before))
    changed = sorted(k for k in before if after.get(k) != before[k])
    assert created == [] and changed == []
    assert not Path(UNWRITABLE).parent.exists()


@pytest.mark.parametrize("args", [["eval", "--suite", "fsm:shp"], ["store", "stats", "afile"],
                                  ["sites", "serve", "shp"]], ids=["eval", "stats", "serve"])
def test_the_console_script_itself_gives_one_line(work, args):
    proc = subprocess.run([str(CUA), *args], cwd=work, capture_output=True, text=True,
                          timeout=120, check=False)
    output = (proc.stdout + proc.stderr).strip()
    assert proc.returncode == 2 and output.startswith("error: ") and "\n" not in output, output
