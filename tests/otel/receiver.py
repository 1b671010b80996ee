"""An OTLP trace receiver for the tests: OTLP/HTTP with protobuf bodies (`POST /v1/traces`) and
OTLP/gRPC (`opentelemetry.proto.collector.trace.v1.TraceService/Export`), both on 127.0.0.1 at
free ports, decoding with the `opentelemetry-proto` package (and `grpcio` for gRPC). It keeps
every request's raw bytes (to grep for secrets), the decoded spans, and how many TCP connections
the HTTP side accepted (to prove that nothing connected)."""

from __future__ import annotations

import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc


@dataclass
class Span:
    """One received span, flattened: ids in hex, attributes as Python values."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    status_code: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    start_ns: int
    end_ns: int
    via: str


def value_of(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value_of(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value_of(kv.value) for kv in any_value.kvlist_value.values}
    return getattr(any_value, kind)


def attributes_of(attrs: Any) -> dict[str, Any]:
    return {kv.key: value_of(kv.value) for kv in attrs}


@dataclass
class Receiver:
    spans: list[Span] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)
    http_connections: int = 0
    http_port: int = 0
    grpc_port: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, body: bytes, via: str) -> None:
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        spans = []
        for resource_spans in request.resource_spans:
            resource = attributes_of(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for s in scope_spans.spans:
                    spans.append(Span(
                        name=s.name, trace_id=s.trace_id.hex(), span_id=s.span_id.hex(),
                        parent_span_id=s.parent_span_id.hex(), kind=s.kind, status_code=s.status.code,
                        attributes=attributes_of(s.attributes), resource=resource,
                        start_ns=s.start_time_unix_nano, end_ns=s.end_time_unix_nano, via=via,
                    ))
        with self._lock:
            self.raw.append(body)
            self.spans.extend(spans)

    def all_bytes(self) -> bytes:
        with self._lock:
            return b"".join(self.raw)

    def named(self, name: str) -> list[Span]:
        with self._lock:
            return [s for s in self.spans if s.name == name]

    def wait_for(self, predicate, timeout: float = 30.0, what: str = "spans") -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                with self._lock:
                    names = [(s.name, s.via) for s in self.spans]
                raise AssertionError(f"timed out waiting for {what}; received {names}")
            time.sleep(0.05)

    # --- the servers ------------------------------------------------------------------------

    def start(self) -> "Receiver":
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                assert self.headers.get("Content-Type") == "application/x-protobuf", self.headers
                receiver.take(body, "http")
                answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        class Counting(ThreadingHTTPServer):
            daemon_threads = True

            def get_request(self):  # every accepted connection is counted
                conn = super().get_request()
                with receiver._lock:
                    receiver.http_connections += 1
                return conn

        self._http = Counting(("127.0.0.1", 0), Handler)
        self.http_port = self._http.server_address[1]
        threading.Thread(target=self._http.serve_forever, daemon=True).start()

        class Service(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request, context):  # noqa: N802 (the service's method name)
                receiver.take(request.SerializeToString(), "grpc")
                return trace_service_pb2.ExportTraceServiceResponse()

        self._grpc = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), self._grpc)
        self.grpc_port = self._grpc.add_insecure_port("127.0.0.1:0")
        self._grpc.start()
        return self

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._grpc.stop(grace=None)
