from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.model.job import PodRequest
from gpufleet.testing.builders import fleet


def test_rollback_restores_free_capacity_exactly():
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    plan = Plan(table)
    req = PodRequest(4, 10, 100)
    plan.bind(PodBinding("a", "w", 0, 0, req))
    mark = plan.checkpoint()
    plan.bind(PodBinding("b", "w", 0, 0, req))
    plan.release(1, PodRequest(0, 0, 0))
    plan.rollback(mark)
    assert plan.table.gpu_free.tolist() == [4, 8]
    assert plan.table.cpu_free.tolist() == [214, 224]
    assert [b.job for b in plan.commit()] == ["a"]
