"""The dashboard: server-rendered pages (jinja2 + htmx) served by ``gpufleet serve`` at ``/``.

Nothing is loaded from the network at run time: htmx and uPlot are vendored under ``static/vendor``
(versions, licences and integrity in ``static/vendor/VENDORED.md``) and ship in the package.
"""

from gpufleet.service.dashboard.pages import mount

__all__ = ["mount"]
