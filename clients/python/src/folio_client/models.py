"""The wire types of the Folio HTTP API, as TypedDicts generated from docs/openapi.json.

`Event` is the union of every event (narrow it on ``event["type"]``); request and answer
bodies carry the names of the OpenAPI schemas (`SessionSummary`, `ToolCallResult`, ...).
"""

from ._models import *  # noqa: F403
