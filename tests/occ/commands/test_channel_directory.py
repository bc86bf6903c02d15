from __future__ import annotations

import pytest

from occ.commands.base import build, parse
from occ.commands.channel_directory import IDS_MAX, DirectoryLookup
from occ.errors import InvalidRequest

SEC = "sec_00000000-0000-4000-8000-000000000000"


def details(data) -> list[dict[str, str]]:
    with pytest.raises(InvalidRequest) as caught:
        parse(DirectoryLookup, data)
    return [d.as_wire() for d in caught.value.details]


def test_the_wire_shape_is_camel_case():
    command = parse(DirectoryLookup, {"secretId": SEC, "kind": "users", "ids": ["U1"], "agentId": "agt_x",
                                      "configurationId": "cfg_x"})
    assert (command.secret_id, command.kind, command.ids) == (SEC, "users", ["U1"])
    assert (command.agent_id, command.configuration_id) == ("agt_x", "cfg_x")
    assert build(DirectoryLookup, secret_id=SEC, kind="channels", query="gen").query == "gen"


@pytest.mark.parametrize(("data", "expected"), [
    ({"kind": "users"}, [{"code": "REQUIRED", "path": "/secretId"}]),
    ({"secretId": SEC, "kind": "groups"}, [{"code": "INVALID_VALUE", "path": "/kind"}]),
    ({"secretId": SEC, "kind": "users", "token": "xoxb-1"}, [{"code": "UNKNOWN_FIELD", "path": "/token"}]),
    ({"secretId": SEC, "kind": "users", "secret_id": SEC}, [{"code": "UNKNOWN_FIELD", "path": "/secret_id"}]),
    ({"secretId": SEC, "kind": "users", "query": "q" * 201}, [{"code": "TOO_LONG", "path": "/query"}]),
    ({"secretId": SEC, "kind": "users", "cursor": "c" * 2001}, [{"code": "TOO_LONG", "path": "/cursor"}]),
    ({"secretId": SEC, "kind": "users", "ids": ["U"] * (IDS_MAX + 1)}, [{"code": "TOO_LONG", "path": "/ids"}]),
    ({"secretId": SEC, "kind": "users", "ids": ["U" * 65]}, [{"code": "TOO_LONG", "path": "/ids/0"}]),
    ({"secretId": SEC, "kind": "users", "ids": [1]}, [{"code": "INVALID_TYPE", "path": "/ids/0"}]),
    ({"secretId": 7, "kind": "users"}, [{"code": "INVALID_TYPE", "path": "/secretId"}]),
])
def test_each_refusal_points_at_its_field(data, expected):
    assert details(data) == expected


@pytest.mark.parametrize("other", [{"query": "a"}, {"cursor": "abc"}])
def test_ids_go_alone(other):
    with pytest.raises(InvalidRequest) as caught:
        parse(DirectoryLookup, {"secretId": SEC, "kind": "users", "ids": ["U1"], **other})
    assert [d.as_wire() for d in caught.value.details] == [{"code": "INVALID_VALUE", "path": "/ids"}]
    assert caught.value.message == "Send either ids, or a query and a cursor, not both."


def test_exactly_ids_limit_is_accepted():
    assert len(parse(DirectoryLookup, {"secretId": SEC, "kind": "users", "ids": ["U"] * IDS_MAX}).ids) == IDS_MAX
