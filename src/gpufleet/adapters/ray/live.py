"""Ask a real Ray cluster where it puts a placement group (reader side; needs the ``ray`` extra).

``ray_placement`` creates the group, waits up to ``timeout_s`` for it, reads
``ray.util.placement_group_table(pg)["bundles_to_node_id"]`` and removes the group again, so the
cluster is left as found. Ray names nodes by NodeID; ``node_names`` maps them to our node names
(the tests tag each Ray node with a custom resource ``gpufleet-node:<name>``).
"""

from __future__ import annotations

from typing import Any

from gpufleet.adapters.ray.mapping import PlacementGroupSpec


def ray_placement(pg: PlacementGroupSpec, node_names: dict[str, str], timeout_s: float = 5.0,
                  keep: bool = False) -> tuple[tuple[str, ...] | None, Any]:
    """(our node name of each bundle, or None if Ray left the group PENDING; the Ray handle if
    ``keep``, else None after removing the group)."""
    import ray
    from ray.util.placement_group import placement_group, placement_group_table, remove_placement_group

    handle = placement_group([b.to_ray() for b in pg.bundles], strategy=str(pg.strategy), name=pg.name)
    ready = handle.wait(timeout_s)
    nodes: tuple[str, ...] | None = None
    if ready:
        table = placement_group_table(handle)
        by_bundle = table["bundles_to_node_id"]
        nodes = tuple(node_names.get(by_bundle[i], by_bundle[i]) for i in range(len(pg.bundles)))
    if keep and ready:
        return nodes, handle
    remove_placement_group(handle)
    del ray
    return nodes, None
