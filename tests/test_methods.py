import pytest

from memd.client import code_of
from memd.errors import InvalidParams, UnknownMethod
from memd.serve.methods import call


@pytest.fixture
def open_memory(ws, memory):
    ws.write("memory/a.md", "# A\nalpha beta\n")
    memory.index()
    return lambda name: memory


def test_search_and_get_through_call(open_memory):
    answer = call(open_memory, "memory_search", {"query": "alpha", "min_score": 0})
    assert answer["results"][0]["path"] == "memory/a.md"
    assert (
        call(open_memory, "memory_get", {"path": "memory/a.md", "from": 2})["text"]
        == "alpha beta\n"
    )
    assert call(open_memory, "health")["ok"] is True
    assert call(open_memory, "status")["files"] == 1
    assert call(open_memory, "reindex", {"full": True})["changed"] == 1


@pytest.mark.parametrize(
    ("method", "params", "param"),
    [
        ("memory_search", {}, "query"),
        ("memory_search", {"query": "  "}, "query"),
        ("memory_search", {"query": 5}, "query"),
        ("memory_search", {"query": "x", "max_results": 0}, "max_results"),
        ("memory_search", {"query": "x", "max_results": "6"}, "max_results"),
        ("memory_search", {"query": "x", "max_results": True}, "max_results"),
        ("memory_search", {"query": "x", "min_score": 1.5}, "min_score"),
        ("memory_search", {"query": "x", "mode": "semantic"}, "mode"),
        ("memory_search", {"query": "x", "paths": [1]}, "paths"),
        ("memory_search", {"query": "x", "since": "last week"}, "since"),
        ("memory_search", {"query": "x", "since": "2026-02-01", "until": "2026-01-01"}, "since"),
        ("memory_search", {"query": "x", "max_result": 3}, "max_result"),
        ("memory_get", {}, "path"),
        ("memory_get", {"path": "memory/a.md", "from": 0}, "from"),
        ("memory_get", {"path": "memory/a.md", "lines": -1}, "lines"),
        ("reindex", {"full": "yes"}, "full"),
        ("memory_search", ["x"], "params"),
    ],
)
def test_bad_params_name_the_parameter(open_memory, method, params, param):
    with pytest.raises(InvalidParams) as err:
        call(open_memory, method, params)
    assert err.value.param == param
    assert f"'{param}'" in str(err.value)
    assert code_of(err.value) == -32602


def test_unknown_param_suggests_the_right_one(open_memory):
    with pytest.raises(InvalidParams, match="did you mean 'max_results'"):
        call(open_memory, "memory_search", {"query": "x", "max_result": 3})
    with pytest.raises(InvalidParams, match="did you mean 'max_results'"):
        call(open_memory, "memory_search", {"query": "x", "limit": 3})  # as other tools say


def test_unknown_method(open_memory):
    with pytest.raises(UnknownMethod) as err:
        call(open_memory, "memory_delete_everything")
    assert code_of(err.value) == -32601


def test_unknown_workspace_is_a_bad_param(open_memory, config):
    from memd.memory import Memory

    def by_name(name):
        config.workspace(name)  # raises for unknown names, as the daemon's lookup does
        return Memory(config, name)

    with pytest.raises(InvalidParams, match="no workspace named 'nope'") as err:
        call(by_name, "status", {"workspace": "nope"})
    assert err.value.param == "workspace"
