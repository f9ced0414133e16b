"""Assembling a corpus from its finished sites: the split by site, deduplication, statistics.

- **Split by site.** Every row of a held-out site goes to ``heldout/``; no row of it, and no
  task of it, reaches ``train/``. Generated sites share vocabularies, so two sites can
  share an instruction (or a goal): a training row whose instruction or goal is one of a
  held-out site's tasks is dropped (counted in the statistics as ``dropped_for_split``). A
  goal is compared by what it asks (``corpus.goal_text``: a named goal's description, else
  the state key or condition), since named goal ids such as ``form`` recur across sites.
- **Deduplication** by (prompt, target) within each split: a step reached along two
  branches with the same history and error is one row.
- **Columns**: the store's SFT export's (TRL's ``messages`` + ``images``, ``prompt``,
  ``target``, the verdict, ``recovery``, ``after_error``) plus ``site``, ``site_key``,
  ``goal_kind`` and ``goal`` of the row's task.
- **A re-export** (``corpus_reexport``) keeps only the rows its source corpus kept (by site
  and row id), in the source's order: with images in the prompt, two rows that were one by
  (prompt, target) can differ by their screenshot, an export's row order may have changed
  since the source was built (which decides the duplicate kept), and the comparison needs the
  same rows.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from pathlib import Path
from typing import Literal, TypedDict

from fsm_sites.synthesis.tasks import load_tasks
from harness.errors import ConfigError
from harness.prompts import PromptConfig
from harness.store.export import datasets_schema, row_schema

SPLITS = ("train", "heldout")
STATS_FILE = "stats.json"


def task_of(task_id: str) -> str:
    """The synthesized task's id in a row's ``task_id`` (``fsm:FILE#TASK@seed=N``)."""
    return task_id.rpartition("#")[2].split("@", 1)[0]


class ImageCell(TypedDict):
    """An image in a Parquet row (the ``datasets`` Image layout)."""

    bytes: bytes
    path: str | None


class CorpusRow(TypedDict):
    """The columns of a corpus row that splitting reads: an SFT export row's
    (``export.sft_rows``, which has more) and the site's own."""

    task_id: str
    instruction: str
    id: str
    step: int
    images: list[ImageCell]
    prompt: object
    target: str
    recovery: bool
    after_error: bool
    site: str
    site_key: str
    goal_kind: str
    goal: str


def _site_rows(folder: Path) -> list[CorpusRow]:
    """The rows of one finished site, with its task's goal and the site's name."""
    import pyarrow.parquet as pq

    tasks = {t.id: t for t in load_tasks(folder / "tasks.jsonl")}
    done = json.loads((folder / "done.json").read_text(encoding="utf-8"))
    rows = pq.read_table(folder / "sft.parquet").to_pylist()
    for row in rows:
        task = tasks[task_of(row["task_id"])]
        row.update({"site": done["site"], "site_key": folder.name, "goal_kind": task.goal_kind,
                    "goal": done["goals"][task.id]})
    return rows


def _key(row: CorpusRow) -> str:
    images = [hashlib.sha1(image["bytes"]).hexdigest() for image in row["images"]]
    text = json.dumps([row["prompt"], images, row["target"]], sort_keys=True, ensure_ascii=False)
    return hashlib.sha1(text.encode()).hexdigest()


def split_rows(rows_by_site: dict[str, list[CorpusRow]], held_out: set[str],
               banned_instructions: set[str], banned_goals: set[str]
               ) -> tuple[dict[str, list[CorpusRow]], int]:
    """(rows per split, deduplicated; training rows dropped for sharing an instruction or a
    goal with a held-out task)."""
    out: dict[str, list[CorpusRow]] = {split: [] for split in SPLITS}
    seen: dict[str, set[str]] = {split: set() for split in SPLITS}
    dropped = 0
    for key, rows in rows_by_site.items():
        split = "heldout" if key in held_out else "train"
        for row in rows:
            if split == "train" and (row["instruction"] in banned_instructions or row["goal"] in banned_goals):
                dropped += 1
                continue
            digest = _key(row)
            if digest not in seen[split]:
                seen[split].add(digest)
                out[split].append(row)
    return out, dropped


#: the rows of each split, (site key, row id) -> position
RowIds = dict[str, dict[tuple[str, str], int]]


def assemble(out: Path, keys: list[str], held_out: set[str], prompt: PromptConfig, *,
             built: list[str], seconds: float, source: tuple[RowIds, dict] | None = None) -> dict:
    """Write ``train/`` and ``heldout/`` from the finished sites among ``keys`` and the
    statistics (``stats.json``); returns the statistics. A re-export passes ``source``: the
    source corpus's rows per split (only those are kept, in its order) and what to record."""
    started = time.perf_counter()
    folders = {key: out / "sites" / key for key in keys if (out / "sites" / key / "done.json").is_file()}
    rows_by_site = {key: _site_rows(folder) for key, folder in folders.items()}
    exported = sum(len(rows) for rows in rows_by_site.values())
    if source is not None:
        wanted = {row for ids in source[0].values() for row in ids}
        rows_by_site = {key: [r for r in rows if (key, r["id"]) in wanted] for key, rows in rows_by_site.items()}
    done = [json.loads((folder / "done.json").read_text(encoding="utf-8")) for folder in folders.values()]
    instructions = {t.instruction for key in folders if key in held_out
                    for t in load_tasks(folders[key] / "tasks.jsonl")}
    goals = {goal for d in done if d["key"] in held_out for goal in d["goals"].values()}
    splits, dropped = split_rows(rows_by_site, held_out, instructions, goals)
    if source is not None:
        for split, rows in splits.items():
            order = source[0][split]
            rows.sort(key=lambda r: order.get((r["site_key"], r["id"]), len(order)))
    for split, rows in splits.items():
        write_rows(rows, out / split / "sft.parquet")
    stats = corpus_stats(splits, done, held_out, prompt)
    stats["rows"]["before_dedup"] = exported
    stats["rows"]["dropped_for_split"] = dropped
    stats["build"] = {"sites_built_now": len(built), "seconds_now": round(seconds, 1),
                      "site_seconds_total": round(sum(d["seconds"] for d in done), 1),
                      "assemble_seconds": round(time.perf_counter() - started, 1),
                      "env_steps": sum(d["env_steps"] for d in done)}
    stats["heldout_tasks"] = [f"fsm:{(folders[k] / 'tasks.jsonl').resolve()}" for k in sorted(folders)
                              if k in held_out]
    if source is not None:
        kept = sum(len(rows) for rows in rows_by_site.values())
        stats["reexport"] = {**source[1], "rows_not_in_source": exported - kept,
                             "source_rows_missing": sum(len(source[0][s]) - len(splits[s]) for s in SPLITS)}
    (out / STATS_FILE).write_text(json.dumps(stats, indent=1), encoding="utf-8")
    return stats


def corpus_stats(splits: dict[str, list[CorpusRow]], done: list[dict], held_out: set[str],
                 prompt: PromptConfig) -> dict:
    """Sites, goal kinds, depths, the share of recovery steps and rows, per split."""
    def share(rows: list[CorpusRow], column: Literal["recovery", "after_error"]) -> float:
        return round(sum(bool(r[column]) for r in rows) / len(rows), 4) if rows else 0.0

    per_split = {}
    for split, rows in splits.items():
        per_split[split] = {
            "rows": len(rows), "sites": len({r["site_key"] for r in rows}),
            "goal_kinds": dict(Counter(r["goal_kind"] for r in rows)),
            "depths": dict(sorted(Counter(int(r["step"]) for r in rows).items())),
            "recovery_share": share(rows, "recovery"), "after_error_share": share(rows, "after_error"),
            "tasks": len({(r["site_key"], r["task_id"]) for r in rows}),
        }
    return {
        "prompt": prompt.model_dump(mode="json"),
        "sites": {"total": len(done), "generated": sum(d["generated"] for d in done),
                  "held_out": sorted(d["key"] for d in done if d["key"] in held_out),
                  "per_site": {d["key"]: {"site": d["site"], "rows": d["rows"], "tasks": d["tasks_kept"],
                                          "seconds": d["seconds"]} for d in done}},
        "tasks": {"synthesized": sum(d["tasks_synthesized"] for d in done),
                  "kept": sum(d["tasks_kept"] for d in done),
                  "goal_kinds": dict(sum((Counter(d["goal_kinds"]) for d in done), Counter()))},
        "rows": {split: per_split[split]["rows"] for split in SPLITS},
        "splits": per_split,
    }


def row_ids(corpus: Path) -> RowIds:
    """A built corpus's rows of each split, (site key, row id) -> position."""
    import pyarrow.parquet as pq

    ids: RowIds = {}
    for split in SPLITS:
        table = pq.read_table(Path(corpus) / split / "sft.parquet", columns=["site_key", "id"])
        rows = zip(table["site_key"].to_pylist(), table["id"].to_pylist(), strict=True)
        ids[split] = {row: i for i, row in enumerate(rows)}
    return ids


def write_rows(rows: list[CorpusRow], target: Path) -> Path:
    """Rows as Parquet in the SFT export's layout, plus the corpus's own columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = row_schema("sft")
    for name in ("site", "site_key", "goal_kind", "goal"):
        schema = schema.append(pa.field(name, pa.string()))
    schema = datasets_schema(schema)
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), target)
    return target


def read_manifest(corpus: Path) -> dict:
    """A built corpus's statistics (its prompt included); a clear error where there is none."""
    path = Path(corpus) / STATS_FILE
    if not path.is_file():
        raise ConfigError(f"expected a corpus built by `cua data corpus` in {corpus}, got no "
                          f"{STATS_FILE}; build it first (cua data corpus --out {corpus})")
    return json.loads(path.read_text(encoding="utf-8"))
