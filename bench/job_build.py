"""Cost of building ``Job``s, which intern their shape keys (model/job.py).

    python bench/job_build.py

Times (process CPU time) 100,000 ``Job(...)`` calls over 12 shapes, best of 3, then 20,000 jobs
each with its own node filter (``eligible_nodes``: one shape key each), and prints how many keys
the intern table holds afterwards (``interned_shapes``: at most ``SHAPE_INTERN_LIMIT``).
"""

from __future__ import annotations

import time

from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, PodRequest, PodSet, interned_shapes


def main() -> None:
    shapes = [PodSet("w", r, PodRequest(g, 16.0 * g, 200.0 * g)) for r in (1, 2, 4) for g in (1, 2, 4, 8)]
    runs = []
    for _ in range(3):
        t = time.process_time()
        for i in range(100_000):
            Job(JobId(f"j{i}"), TenantId("t"), (shapes[i % len(shapes)],), 0.0, 60.0)
        runs.append(time.process_time() - t)
    t = time.process_time()
    for i in range(20_000):
        Job(JobId(f"e{i}"), TenantId("t"), (shapes[0],), 0.0, 60.0, eligible_nodes=frozenset({f"n{i}"}))
    filtered = time.process_time() - t
    print(f"100k jobs of 12 shapes: {min(runs):.3f} s CPU (best of 3); 20k distinct-filter jobs: "
          f"{filtered:.3f} s; keys held: {interned_shapes()}")


if __name__ == "__main__":
    main()
