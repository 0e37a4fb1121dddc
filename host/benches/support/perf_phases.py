#!/usr/bin/env python3
"""Splits a `perf` profile of a toolhost server into phases: each sample goes to
the innermost frame of its stack that matches a phase (kernel frames first, then
the crates). Input: `perf script -F comm,ip,sym` of a `perf record -g` profile
(`--call-graph dwarf` for release builds), on standard input."""
import re, sys, collections
CATS = [
 ("kernel: futex (thread wake/park)", r"futex"),
 ("kernel: epoll", r"epoll"),
 ("kernel: socket send", r"tcp_sendmsg|sock_write|__sys_sendto|sock_sendmsg|do_writev|writev"),
 ("kernel: socket recv", r"tcp_recvmsg|sock_read|__sys_recvfrom|sock_recvmsg"),
 ("kernel: pipe/file io", r"ksys_write|ksys_read|pipe_write|pipe_read"),
 ("kernel: scheduling", r"__schedule|schedule\b|finish_task_switch|try_to_wake_up"),
 ("kernel: other syscalls", r"do_syscall_64|entry_SYSCALL"),
 ("sandbox (wasmtime)", r"wasmtime|Plugin>::invoke|plugin::call|wasm\[|cranelift|component::"),
 ("JSON (serde_json)", r"serde_json|serde::de|serde::ser|::deserialize|::serialize"),
 ("jsonschema", r"jsonschema"),
 ("tracing", r"tracing::|tracing_core|tracing_subscriber"),
 ("SSE framing", r"sse|Sse"),
 ("resume (ours)", r"mcp::http::resume"),
 ("rmcp session worker", r"LocalSessionWorker|session::local|WorkerTransport|transport::worker"),
 ("rmcp http service", r"StreamableHttpService|streamable_http_server::tower"),
 ("rmcp service loop", r"rmcp::service"),
 ("toolset / checks (ours)", r"toolhost::toolset|toolhost::policy|toolhost::tool|toolhost::schema"),
 ("mcp layer (ours)", r"toolhost::mcp"),
 ("axum / tower", r"axum|tower"),
 ("hyper HTTP/1", r"hyper"),
 ("allocator", r"_rjem_|jemalloc|malloc|free|memmove|memcpy"),
 ("tokio scheduler", r"tokio::runtime"),
]
pats=[(n,re.compile(p)) for n,p in CATS]
counts=collections.Counter(); total=0
stack=[]
def flush():
    global total
    if not stack: return
    total+=1
    for fn in stack:  # leaf first
        for n,p in pats:
            if p.search(fn):
                counts[n]+=1; return
    counts["other: "+stack[0][:60]]+=1
for line in sys.stdin:
    line=line.rstrip("\n")
    if not line.strip():
        flush(); stack=[]; continue
    if line.startswith("\t"):
        parts=line.strip().split(None,1)
        if len(parts)==2: stack.append(parts[1])
    else:
        flush(); stack=[]
flush()
other=0
for n,c in counts.most_common():
    if n.startswith("other") and c/total<0.01: other+=c; continue
    print(f"{100*c/total:5.1f}%  {n}")
print(f"{100*other/total:5.1f}%  other (each <1%)")
print(f"samples: {total}")
