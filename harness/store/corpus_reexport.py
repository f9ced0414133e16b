"""`cua data corpus OUT --source SOURCE`: a built corpus's rows in another prompt format.

Issue 21's row 6 trains row 1's SFT in the screenshot + elements mode on the same data, to
see whether the image helps, hurts, or only costs time. The trees in the source's site stores
already hold every screenshot and element list, so no browser runs again. For each site of
SOURCE, one after another:

1. its ``store/``, opened read-only, is exported with OUT's ``prompt`` and the build's own
   selection (``corpus.export_site``: ``steps="agent"``) into ``OUT/sites/KEY/sft.parquet``;
2. ``tasks.jsonl`` and ``site.yaml`` (a generated site's spec, which its tasks file resolves)
   are copied beside it, then SOURCE's ``done.json`` (its row count updated), written last.

OUT's prompt is SOURCE's with the fields the command names changed. Then the same assembly
runs with SOURCE's held-out sites (from its ``stats.json``, never drawn again), keeping
exactly the rows SOURCE kept in each split, in its order, so the two corpora differ only in
their prompts and images. OUT's recipe (``corpus.yaml``) is SOURCE's with
OUT's prompt and ``source``; its ``stats.json`` records the source and its prompt under
``reexport``. A rerun resumes (sites with ``done.json`` are skipped); OUT holds no stores.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import yaml

from harness.errors import ConfigError
from harness.prompts import PromptConfig
from harness.store.corpus import (
    DONE,
    RECIPE_FIELDS,
    RECIPE_FILE,
    CorpusConfig,
    check_recipe,
    corpus_progress,
    export_site,
)
from harness.store.corpus_split import assemble, read_manifest, row_ids
from harness.store.damage import DB_NAME

#: the fields a re-export takes: the rest come from the source corpus
OWN_FIELDS = {"out", "source", "prompt"}
COPIED = ("tasks.jsonl", "site.yaml")


def read_source(source: Path, out: Path) -> tuple[dict, dict]:
    """The source corpus's recipe and statistics; refused unless it is a corpus built by
    `cua data corpus`, with the stores of its sites."""
    if source == Path(out).resolve():
        raise ConfigError(f"--source: expected another corpus than --out, got {source} for both; "
                          "re-export into a new folder")
    stats = read_manifest(source)
    if not (source / RECIPE_FILE).is_file():
        raise ConfigError(f"--source: expected a corpus built by `cua data corpus` in {source}, got "
                          f"no {RECIPE_FILE}; name a corpus folder")
    recipe = yaml.safe_load((source / RECIPE_FILE).read_text(encoding="utf-8"))
    if recipe.get("source"):
        raise ConfigError(f"--source: expected a corpus built by `cua data corpus` (its sites' "
                          f"stores are exported), got {source}, a re-export of {recipe['source']}; "
                          f"re-export from --source {recipe['source']}")
    missing = [key for key in stats["sites"]["per_site"]
               if not (source / "sites" / key / "store" / DB_NAME).is_file()
               or not (source / "sites" / key / DONE).is_file()]
    if missing:
        raise ConfigError(f"--source: expected each site of the corpus in {source} finished with its "
                          f"store, got none for {', '.join(missing[:5])}; resume its build first "
                          f"(cua data corpus {source})")
    return recipe, stats


def reexport_site(source: Path, folder: Path, config: CorpusConfig) -> dict:
    """One site's folder in OUT from its folder in SOURCE; returns its ``done.json``."""
    if (folder / DONE).is_file():
        return json.loads((folder / DONE).read_text(encoding="utf-8"))
    shutil.rmtree(folder, ignore_errors=True)  # what a crash left behind
    folder.mkdir(parents=True)
    started = time.perf_counter()
    for name in COPIED:
        if (source / name).is_file():
            shutil.copyfile(source / name, folder / name)
    rows = export_site(source / "store", folder, config.prompt, read_only=True)
    done = {**json.loads((source / DONE).read_text(encoding="utf-8")), "rows": rows,
            "export_seconds": round(time.perf_counter() - started, 2)}
    (folder / f"{DONE}.tmp").write_text(json.dumps(done, indent=1), encoding="utf-8")
    (folder / f"{DONE}.tmp").replace(folder / DONE)
    return done


def reexport_config(config: CorpusConfig, recipe: dict, source_prompt: dict) -> CorpusConfig:
    """The re-export's config: the source's recipe, and its prompt with the fields the
    command names changed (``--set prompt.observation=screenshot+elements`` changes only
    that, where a build's partial prompt takes the prompt defaults)."""
    given = config.prompt.model_fields_set if "prompt" in config.model_fields_set else set()
    prompt = PromptConfig.model_validate({**source_prompt, **config.prompt.model_dump(include=given)})
    return config.model_copy(update={**{k: recipe[k] for k in RECIPE_FIELDS if k not in OWN_FIELDS},
                                     "prompt": prompt})


def reexport_corpus(config: CorpusConfig, *, show_progress: bool = True) -> dict:
    """Re-export ``config.source`` into ``config.out`` in ``config.prompt`` (or resume it);
    returns OUT's statistics."""
    assert config.source is not None
    given = sorted(config.model_fields_set - OWN_FIELDS)
    if given:
        raise ConfigError(f"--source: expected only --out and prompt beside it (a re-export takes "
                          f"the rest from the source corpus), got {', '.join(given)}; drop them")
    source, out = config.source, Path(config.out)
    recipe, stats = read_source(source, out)
    config = reexport_config(config, recipe, stats["prompt"])
    check_recipe(config)
    keys, held_out = list(stats["sites"]["per_site"]), set(stats["sites"]["held_out"])
    todo = [key for key in keys if not (out / "sites" / key / DONE).is_file()]
    started = time.perf_counter()
    with corpus_progress(show_progress) as progress:
        bar = progress.add_task("sites", total=len(keys), completed=len(keys) - len(todo))
        for key in todo:
            reexport_site(source / "sites" / key, out / "sites" / key, config)
            progress.advance(bar)
    record = {"source": str(source), "source_prompt": stats["prompt"], "source_rows": stats["rows"]}
    return assemble(out, keys, held_out, config.prompt, built=todo, seconds=time.perf_counter() - started,
                    source=(row_ids(source), record))
