"""A loopback OTLP/HTTP receiver for the telemetry tests: what an OpenTelemetry
Collector's `otlphttp` receiver accepts (`POST /v1/traces`, `POST /v1/metrics`,
protobuf bodies), decoded with the official `opentelemetry-proto` messages into
plain records the tests can assert on."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

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
    """Listens on a free loopback port until stopped; keeps every span and metric point."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.points: list[Point] = []
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

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> Receiver:
        self._thread.start()
        return self

    def stop(self) -> None:
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

