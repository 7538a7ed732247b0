"""LangGraph 1.2's stream-events protocol "v3": ``graph.stream_events(input,
version="v3")`` returns a ``GraphRunStream`` (``astream_events``: an
``AsyncGraphRunStream``) whose projections the caller drives by iterating them:
``run.values``, ``run.messages`` (langchain-core's ``ChatModelStream`` per model
call), ``run.lifecycle``, ``run.subgraphs`` and those of the ``StreamTransformer``s
passed as ``transformers=`` (or to ``compile(transformers=...)``)."""

from ironloop.stream._types import ProtocolEvent, StreamTransformer
from ironloop.stream.run_stream import (
    AsyncGraphRunStream,
    AsyncSubgraphRunStream,
    GraphRunStream,
    SubgraphRunStream,
)
from ironloop.stream.stream_channel import StreamChannel
from ironloop.stream.transformers import (
    CheckpointsTransformer,
    CustomTransformer,
    DebugTransformer,
    LifecyclePayload,
    LifecycleTransformer,
    SubgraphStatus,
    SubgraphTransformer,
    TasksTransformer,
    UpdatesTransformer,
)

__all__ = [
    "AsyncGraphRunStream",
    "AsyncSubgraphRunStream",
    "CheckpointsTransformer",
    "CustomTransformer",
    "DebugTransformer",
    "GraphRunStream",
    "LifecyclePayload",
    "LifecycleTransformer",
    "ProtocolEvent",
    "StreamChannel",
    "StreamTransformer",
    "SubgraphRunStream",
    "SubgraphStatus",
    "SubgraphTransformer",
    "TasksTransformer",
    "UpdatesTransformer",
]
