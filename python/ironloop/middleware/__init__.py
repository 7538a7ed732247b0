"""Agent middleware, as ``langchain.agents.middleware`` holds it: the
``AgentMiddleware`` base class, the hook decorators, the request / response types of
wrap hooks, and the built-in middleware. Use them with ``ironloop.create_agent``.

Example:
    >>> from ironloop import create_agent
    >>> from ironloop.middleware import HumanInTheLoopMiddleware, ModelCallLimitMiddleware
    >>> from ironloop.models import ScriptedChatModel
    >>> agent = create_agent(
    ...     ScriptedChatModel(["hi"]),
    ...     [],
    ...     middleware=[ModelCallLimitMiddleware(run_limit=3)],
    ... )
    >>> agent.invoke({"messages": [("user", "hello")]})["messages"][-1].content
    'hi'
"""

from __future__ import annotations

from ironloop._trace_policy import configure_trace_policy
from ironloop.middleware._redaction import RedactionRule
from ironloop.middleware.auto_mode import AutoModeMiddleware
from ironloop.middleware.context_editing import ClearToolUsesEdit, ContextEditingMiddleware
from ironloop.middleware.fallback import ModelFallbackMiddleware
from ironloop.middleware.file_search import FilesystemFileSearchMiddleware
from ironloop.middleware.human_in_the_loop import (
    ActionRequest,
    HITLRequest,
    HITLResponse,
    HumanInTheLoopMiddleware,
    InterruptOnConfig,
    ReviewConfig,
)
from ironloop.middleware.limits import (
    ModelCallLimitExceededError,
    ModelCallLimitMiddleware,
    ModelCallLimitState,
    ToolCallLimitExceededError,
    ToolCallLimitMiddleware,
    ToolCallLimitState,
)
from ironloop.middleware.model_refusal import ModelRefusalError, ModelRefusalMiddleware
from ironloop.middleware.model_router import ModelChoice, ModelRouterMiddleware
from ironloop.middleware.permissions import ToolPermissions
from ironloop.middleware.pii import PIIDetectionError, PIIMatch, PIIMiddleware
from ironloop.middleware.provider_tool_search import ProviderToolSearchMiddleware
from ironloop.middleware.retry import ModelRetryMiddleware, ToolRetryMiddleware
from ironloop.middleware.shell_tool import (
    CodexSandboxExecutionPolicy,
    DockerExecutionPolicy,
    HostExecutionPolicy,
    ShellToolMiddleware,
)
from ironloop.middleware.summarization import SummarizationMiddleware
from ironloop.middleware.todo import TodoListMiddleware
from ironloop.middleware.tool_emulator import LLMToolEmulator
from ironloop.middleware.tool_error import ToolErrorMiddleware
from ironloop.middleware.tool_selection import LLMToolSelectorMiddleware
from ironloop.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    InputAgentState,
    ModelCallResult,
    ModelRequest,
    ModelResponse,
    OmitFromInput,
    OmitFromOutput,
    OutputAgentState,
    PrivateStateAttr,
    ToolCallRequest,
    TracePolicy,
    after_agent,
    after_model,
    before_agent,
    before_model,
    dynamic_prompt,
    hook_config,
    omit_payload,
    wrap_model_call,
    wrap_tool_call,
)

__all__ = [
    "ActionRequest",
    "AgentMiddleware",
    "AgentState",
    "AutoModeMiddleware",
    "ClearToolUsesEdit",
    "CodexSandboxExecutionPolicy",
    "ContextEditingMiddleware",
    "DockerExecutionPolicy",
    "ExtendedModelResponse",
    "FilesystemFileSearchMiddleware",
    "HITLRequest",
    "HITLResponse",
    "HostExecutionPolicy",
    "HumanInTheLoopMiddleware",
    "InputAgentState",
    "InterruptOnConfig",
    "LLMToolEmulator",
    "LLMToolSelectorMiddleware",
    "ModelCallLimitExceededError",
    "ModelCallLimitMiddleware",
    "ModelCallLimitState",
    "ModelCallResult",
    "ModelChoice",
    "ModelFallbackMiddleware",
    "ModelRefusalError",
    "ModelRefusalMiddleware",
    "ModelRequest",
    "ModelResponse",
    "ModelRetryMiddleware",
    "ModelRouterMiddleware",
    "OmitFromInput",
    "OmitFromOutput",
    "OutputAgentState",
    "PIIDetectionError",
    "PIIMatch",
    "PIIMiddleware",
    "PrivateStateAttr",
    "ProviderToolSearchMiddleware",
    "RedactionRule",
    "ReviewConfig",
    "ShellToolMiddleware",
    "SummarizationMiddleware",
    "TodoListMiddleware",
    "ToolCallLimitExceededError",
    "ToolCallLimitMiddleware",
    "ToolCallLimitState",
    "ToolCallRequest",
    "ToolErrorMiddleware",
    "ToolPermissions",
    "ToolRetryMiddleware",
    "TracePolicy",
    "after_agent",
    "after_model",
    "before_agent",
    "before_model",
    "configure_trace_policy",
    "dynamic_prompt",
    "hook_config",
    "omit_payload",
    "wrap_model_call",
    "wrap_tool_call",
]
