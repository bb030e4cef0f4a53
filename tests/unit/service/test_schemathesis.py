"""The whole API fuzzed from its own OpenAPI document by schemathesis: no 5xx, no hang.

Every operation in ``/api/v1/openapi.json`` (the event stream excepted: it is a stream, tested on
its own) gets schemathesis's generated requests, valid and invalid, with an admin token (the role
that reaches every handler), against a real service over a real SQLite store with one job in it.
Checks: no response is a 5xx (schemathesis's ``not_a_server_error``), none takes over ``MAX_S``
seconds. Bounded: ``EXAMPLES`` per operation.

(schemathesis's pytest plugin, ``from_fixture``, touches a pytest internal that pytest 9 removed,
so the operations are walked here and each one's strategy run with hypothesis directly.)
"""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from tests.unit.service.conftest import job_body

EXAMPLES = 12
MAX_S = 10.0


def test_no_generated_request_gets_a_5xx_or_hangs(served):
    served.post_job(job_body("j1", gpus=8))  # something for the job routes to find
    served.tick()
    schema = schemathesis.openapi.from_asgi("/api/v1/openapi.json", served.client.app)
    ops = [r.ok() for r in schema.exclude(path="/api/v1/events").get_all_operations()]
    doc = served.client.get("/api/v1/openapi.json").json()
    listed = {(m.upper(), p) for p, item in doc["paths"].items() for m in item if p != "/api/v1/events"}
    assert {(o.method.upper(), o.path) for o in ops} == listed  # every operation, none skipped

    for op in ops:
        @settings(max_examples=EXAMPLES, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                         HealthCheck.function_scoped_fixture])
        @given(case=op.as_strategy())
        def one(case) -> None:
            r = case.call_and_validate(headers=served.admin, checks=[not_a_server_error])
            assert r.elapsed < MAX_S, f"{case.method} {case.formatted_path}: {r.elapsed:.1f} s"

        one()
