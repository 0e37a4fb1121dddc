"""A loopback OTLP receiver for the telemetry tests: what an OpenTelemetry
Collector's `otlp` receiver accepts over HTTP (`POST /v1/traces`, `POST /v1/metrics`,
`POST /v1/logs`, protobuf bodies) or over gRPC (the `TraceService` and
`MetricsService` of `opentelemetry-proto`, served by `grpcio`), decoded with the official `opentelemetry-proto` messages into
plain records the tests can assert on."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent import futures
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

#: `Span.SpanKind` values.
SERVER = 2
CLIENT = 3
INTERNAL = 1
#: `Status.StatusCode.STATUS_CODE_ERROR`.
STATUS_ERROR = 2


def value(v: AnyValue) -> Any:
    which = v.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return attributes(v.kvlist_value.values)
    return getattr(v, which)


def attributes(kvs: Any) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in kvs}


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    attributes: dict[str, Any]
    status_code: int
    status_message: str
    start: int
    end: int
    resource: dict[str, Any]
    links: list[tuple[str, str]] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    #: The instrumentation scope's name (`toolhost`, or the framework's tracer).
    scope: str = ""

    def within(self, parent: Span) -> bool:
        """Whether this span's time lies within `parent`'s."""
        return parent.start <= self.start and self.end <= parent.end


@dataclass
class Point:
    """One data point of a metric: its attributes and, for a histogram, its count."""

    metric: str
    unit: str
    attributes: dict[str, Any]
    count: int


class Receiver:
    """Listens on a free loopback port until stopped, over OTLP/HTTP or (`protocol`
    `grpc`) OTLP/gRPC; keeps every span and metric point, and counts log records
    (an agent framework may export its logs too)."""

    def __init__(self, protocol: str = "http/protobuf") -> None:
        self.protocol = protocol
        self.spans: list[Span] = []
        self.points: list[Point] = []
        self.log_records = 0
        self.requests = 0
        self._changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/v1/traces":
                    request = ExportTraceServiceRequest()
                    request.ParseFromString(body)
                    receiver._add_spans(request)
                    answer = ExportTraceServiceResponse().SerializeToString()
                elif self.path == "/v1/metrics":
                    request = ExportMetricsServiceRequest()
                    request.ParseFromString(body)
                    receiver._add_points(request)
                    answer = ExportMetricsServiceResponse().SerializeToString()
                elif self.path == "/v1/logs":
                    request = ExportLogsServiceRequest()
                    request.ParseFromString(body)
                    receiver._add_logs(request)
                    answer = ExportLogsServiceResponse().SerializeToString()
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self._grpc: Any = None
        if protocol == "grpc":
            self._grpc, self._port = self._grpc_server()
        else:
            self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            self._port = self._server.server_address[1]
            self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _grpc_server(self) -> tuple[Any, int]:
        import grpc
        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

        receiver = self

        class Traces(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:  # noqa: N802
                receiver._add_spans(request)
                return ExportTraceServiceResponse()

        class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
            def Export(self, request: ExportMetricsServiceRequest, context: Any) -> ExportMetricsServiceResponse:  # noqa: N802
                receiver._add_points(request)
                return ExportMetricsServiceResponse()

        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), server)
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        return server, port

    @property
    def endpoint(self) -> str:
        """The base URL an exporter is given (`OTEL_EXPORTER_OTLP_ENDPOINT`)."""
        return f"http://127.0.0.1:{self._port}"

    def start(self) -> Receiver:
        if self._grpc is not None:
            self._grpc.start()
        else:
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._grpc is not None:
            self._grpc.stop(grace=None)
        else:
            self._server.shutdown()
            self._server.server_close()

    def _add_spans(self, request: ExportTraceServiceRequest) -> None:
        with self._changed:
            self.requests += 1
            for resource_spans in request.resource_spans:
                resource = attributes(resource_spans.resource.attributes)
                for scope in resource_spans.scope_spans:
                    for s in scope.spans:
                        self.spans.append(
                            Span(
                                trace_id=s.trace_id.hex(),
                                span_id=s.span_id.hex(),
                                parent_span_id=s.parent_span_id.hex(),
                                name=s.name,
                                kind=s.kind,
                                attributes=attributes(s.attributes),
                                status_code=s.status.code,
                                status_message=s.status.message,
                                start=s.start_time_unix_nano,
                                end=s.end_time_unix_nano,
                                resource=resource,
                                links=[(link.trace_id.hex(), link.span_id.hex()) for link in s.links],
                                events=[event.name for event in s.events],
                                scope=scope.scope.name,
                            )
                        )
            self._changed.notify_all()

    def _add_points(self, request: ExportMetricsServiceRequest) -> None:
        with self._changed:
            self.requests += 1
            for resource_metrics in request.resource_metrics:
                for scope in resource_metrics.scope_metrics:
                    for metric in scope.metrics:
                        data = metric.WhichOneof("data")
                        points = getattr(metric, data).data_points if data else []
                        for point in points:
                            count = getattr(point, "count", 0)
                            self.points.append(Point(metric.name, metric.unit, attributes(point.attributes), count))
            self._changed.notify_all()

    def _add_logs(self, request: ExportLogsServiceRequest) -> None:
        with self._changed:
            self.requests += 1
            for resource_logs in request.resource_logs:
                for scope in resource_logs.scope_logs:
                    self.log_records += len(scope.log_records)
            self._changed.notify_all()

    def ancestors(self, span: Span) -> list[Span]:
        """The spans above `span` in its trace, nearest first, as far as they arrived."""
        found: list[Span] = []
        by_id = {(s.trace_id, s.span_id): s for s in self.spans}
        parent = by_id.get((span.trace_id, span.parent_span_id))
        while parent is not None and parent not in found:
            found.append(parent)
            parent = by_id.get((parent.trace_id, parent.parent_span_id))
        return found

    def wait_for(self, what: str, found: Callable[[Receiver], Any], timeout: float = 30.0) -> Any:
        """Waits until `found(self)` is truthy; gives what it gave (a hang guard, not a timing check)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                got = found(self)
                if got:
                    return got
                left = deadline - time.monotonic()
                if left <= 0:
                    names = sorted({s.name for s in self.spans})
                    raise AssertionError(f"the receiver never got {what}; spans: {names}")
                self._changed.wait(left)

    def named(self, name: str) -> list[Span]:
        return [s for s in self.spans if s.name == name]



#: The test process's own spans, as an agent's (the MCP SDK's client spans among
#: them): kept in memory once `trace_as_an_agent()` ran.
AGENT_SPANS = InMemorySpanExporter()


def trace_as_an_agent() -> None:
    """Makes the test process trace as an agent would: an SDK tracer provider
    keeping spans in `AGENT_SPANS` (once: the provider is process-wide)."""
    from opentelemetry import trace

    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(AGENT_SPANS))
        trace.set_tracer_provider(provider)


@pytest.fixture(scope="module")
def agent_tracing() -> None:
    """`trace_as_an_agent()` as a fixture: a test module that wants it imports it
    and marks it autouse with `pytestmark = pytest.mark.usefixtures(...)`."""
    trace_as_an_agent()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """An OTLP/HTTP receiver, for one test."""
    got = Receiver().start()
    yield got
    got.stop()
