"""A small client for the MCP Tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`)
on the official SDK, which has the pieces but no tasks client yet: `TasksExtension`
declares the extension and claims the `resultType: "task"` answer of `tools/call`;
`get`, `update` and `cancel` send the raw `tasks/*` requests.

`Client(extensions=[TasksExtension()])` then resolves a task transparently (polls it to
its end and returns the final `CallToolResult`); `session.call_tool(...,
allow_claimed=True)` returns the `CreateTaskResult` handle instead, for tests that drive
the task by hand.
"""

from __future__ import annotations

from typing import Any, Literal

import anyio
from mcp import MCPError, types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession
from mcp_types import Request, Result
from pydantic import ConfigDict

TASKS = "io.modelcontextprotocol/tasks"

#: Hang guard for one task to end (never a timing assertion).
TASK_S = 60.0


class CreateTaskResult(Result):
    """The `tools/call` answer that is a task handle (`resultType: "task"`)."""

    result_type: Literal["task"]
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class TaskState(Result):
    """A `tasks/get` answer: the task, with the payload of its status."""

    model_config = ConfigDict(extra="allow")

    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    input_requests: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    @property
    def terminal(self) -> bool:
        return self.status in ("completed", "failed", "cancelled")

    def call_result(self) -> types.CallToolResult:
        """The final result of a completed task."""
        assert self.status == "completed" and self.result is not None, self
        return types.CallToolResult.model_validate(self.result)


class Ack(Result):
    """The empty acknowledgement of `tasks/update` and `tasks/cancel`."""

    model_config = ConfigDict(extra="allow")


class _TaskRequest(Request[dict[str, Any], str]):
    # SEP-2663: `Mcp-Name` carries the task ID over HTTP.
    name_param = "taskId"


class GetTask(_TaskRequest):
    method: Literal["tasks/get"] = "tasks/get"


class UpdateTask(_TaskRequest):
    method: Literal["tasks/update"] = "tasks/update"


class CancelTask(_TaskRequest):
    method: Literal["tasks/cancel"] = "tasks/cancel"


async def get(session: ClientSession, task_id: str) -> TaskState:
    return await session.send_request(GetTask(params={"taskId": task_id}), TaskState)


async def update(session: ClientSession, task_id: str, responses: dict[str, Any]) -> None:
    await session.send_request(UpdateTask(params={"taskId": task_id, "inputResponses": responses}), Ack)


async def cancel(session: ClientSession, task_id: str) -> None:
    await session.send_request(CancelTask(params={"taskId": task_id}), Ack)


async def start(
    session: ClientSession, tool: str, args: dict[str, Any], meta: dict[str, Any] | None = None
) -> CreateTaskResult:
    """Calls a long-running tool; asserts the answer is a task handle."""
    with anyio.fail_after(30):
        handle = await session.call_tool(tool, args, meta=meta, allow_claimed=True)
    assert isinstance(handle, CreateTaskResult), handle
    return handle


async def wait(session: ClientSession, task_id: str, until: tuple[str, ...] = ()) -> TaskState:
    """Polls the task until its status is one of `until`, or a terminal one."""
    with anyio.fail_after(TASK_S):
        while True:
            state = await get(session, task_id)
            if state.status in until or state.terminal:
                return state
            await anyio.sleep((state.poll_interval_ms or 500) / 1000)


class TasksExtension(ClientExtension):
    """Declares the Tasks extension; resolves a task handle by polling it to its end."""

    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self._resolve)]

    async def _resolve(self, handle: CreateTaskResult, ctx: ClaimContext) -> types.CallToolResult:
        state = await wait(ctx.session, handle.task_id)
        if state.status == "completed":
            return state.call_result()
        message = (state.error or {}).get("message") or state.status_message or state.status
        raise MCPError(code=-32603, message=f"task {handle.task_id} {state.status}: {message}")
