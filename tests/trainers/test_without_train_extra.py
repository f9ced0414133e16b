"""`cua` and the openai: agent work without the train extra (no torch, transformers,
tokenizers or peft): only `hf:`, `cua model init` and `cua serve` need it."""

from __future__ import annotations

import subprocess
import sys

BLOCK = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {'torch', 'transformers', 'tokenizers', 'peft', 'safetensors', 'accelerate'}:
            raise ModuleNotFoundError(f'blocked: {name}', name=name)
sys.meta_path.insert(0, Block())
"""


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK + code], capture_output=True, text=True, timeout=120)


def test_the_cli_and_the_openai_agent_import_without_it() -> None:
    result = run("from harness.cli import app\nfrom typer.testing import CliRunner\n"
                 "print(CliRunner().invoke(app, ['--help']).output)\n"
                 "from harness.agents.registry import make_agent\n"
                 "print(type(make_agent('openai:http://127.0.0.1:1/v1#m')).__name__)")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "serve" in result.stdout and "model" in result.stdout and "OpenAIAgent" in result.stdout


def test_the_hf_agent_says_what_is_missing() -> None:
    result = run("from harness.agents.registry import make_agent\ntry:\n    make_agent('hf:/tmp')\n"
                 "except Exception as exc:\n    print(type(exc).__name__, exc)")
    assert "MissingExtraError" in result.stdout and "cua-harness[train]" in result.stdout


def test_model_init_without_it_is_a_one_line_error(tmp_path) -> None:
    result = run("from harness.cli import app\nfrom typer.testing import CliRunner\n"
                 f"r = CliRunner().invoke(app, ['model', 'init', '--out', {str(tmp_path / 'm')!r}])\n"
                 "print(r.exit_code, r.output)")
    assert result.stdout.startswith("2 ") and "cua-harness[train]" in result.stdout
