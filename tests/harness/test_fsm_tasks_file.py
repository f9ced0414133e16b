"""The `fsm:TASKS.jsonl` suite: a tasks file from `cua tasks synth` on a synthesized site."""

from __future__ import annotations

import pytest

from fsm_sites.generator import synthesize_site
from fsm_sites.spec.site import dump_spec
from fsm_sites.synthesis.tasks import save_tasks, synthesize_tasks
from harness.errors import TaskError, UnknownTaskError
from harness.tasks.fsm import FSMTask, _site_for_tasks_file
from harness.tasks.registry import make_task, suite_task_ids


@pytest.fixture()
def tasks_file(tmp_path):
    spec = synthesize_site(11, "easy")
    dump_spec(spec, tmp_path / "site.yaml")
    tasks = synthesize_tasks(spec, 4, seed=3)
    path = tmp_path / "tasks.jsonl"
    save_tasks(tasks, path)
    return path, spec, tasks


def test_a_tasks_file_expands_to_one_task_id_per_task(tasks_file):
    path, _, tasks = tasks_file
    ids = suite_task_ids(f"fsm:{path}")
    assert ids == [f"fsm:{path}#{t.id}" for t in tasks]
    phone = suite_task_ids(f"fsm:{path}@phone")  # every task of the file, in a phone viewport
    assert phone == [f"fsm:{path}#{t.id}@phone" for t in tasks]
    task = make_task(phone[0])
    assert task.task == tasks[0] and task.sandbox_request.viewport == (390, 844)


def test_a_task_from_the_file_carries_the_spec_found_beside_it(tasks_file):
    path, spec, tasks = tasks_file
    task = make_task(f"fsm:{path}#{tasks[1].id}")
    assert isinstance(task, FSMTask)
    assert task.task == tasks[1]
    assert task._site_spec == spec


def test_an_unknown_task_id_in_the_file_is_refused(tasks_file):
    path, _, _ = tasks_file
    with pytest.raises(UnknownTaskError, match="expected a task of suite 'fsm'"):
        make_task(f"fsm:{path}#no-such-task")


def test_a_missing_tasks_file_names_the_path(tmp_path):
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(TaskError, match="does not exist"):
        suite_task_ids(f"fsm:{missing}")


def test_a_tasks_file_without_its_spec_says_what_to_do(tasks_file):
    path, spec, _ = tasks_file
    (path.parent / "site.yaml").unlink()
    _site_for_tasks_file.cache_clear()
    with pytest.raises(TaskError, match="keep the spec you synthesized tasks from next to"):
        _site_for_tasks_file(str(path), spec.name)
