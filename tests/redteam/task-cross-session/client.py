#!/usr/bin/env python3
# Two MCP sessions on one `hands serve` (both with the token, each its own Mcp-Session-Id). Session 1 starts two
# tasks; session 2 reads the first one's result and cancels the second one. argv: base token
import json, sys, urllib.request, time
base, tok = sys.argv[1], sys.argv[2]
def post(body, extra):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Authorization": "Bearer " + tok}
    h.update(extra)
    req = urllib.request.Request(base + "/mcp", data=json.dumps(body).encode(), headers=h, method="POST")
    try:
        r = urllib.request.urlopen(req, timeout=30); return r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.headers, "HTTP %d %s" % (e.code, e.read().decode()[:300])
def msg(t):
    for line in t.splitlines():
        if line.startswith("data: ") and line[6:].strip().startswith("{"): return json.loads(line[6:])
    return json.loads(t)
def session(name):
    hd, _ = post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}, "clientInfo": {"name": name, "version": "1"}}}, {})
    h = {"Mcp-Session-Id": hd.get("Mcp-Session-Id"), "MCP-Protocol-Version": "2025-11-25"}
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, h); return h
def rpc(h, i, method, params): return msg(post({"jsonrpc": "2.0", "id": i, "method": method, "params": params}, dict(h, **{"Mcp-Name": params.get("taskId", params.get("name", ""))}))[1])
s1 = session("victim"); s2 = session("other")
print("sessions:", s1["Mcp-Session-Id"], s2["Mcp-Session-Id"])
t1 = rpc(s1, 1, "tools/call", {"name": "bash", "arguments": {"command": "echo VICTIM_PRIVATE_OUTPUT_31; sleep 1", "timeout": 90000}})["result"]["taskId"]
t2 = rpc(s1, 2, "tools/call", {"name": "bash", "arguments": {"command": "sleep 45; echo done", "timeout": 90000}})["result"]["taskId"]
time.sleep(3)
g = rpc(s2, 3, "tasks/get", {"taskId": t1}); print("session 2 tasks/get of session 1's task:", json.dumps(g)[:400])
c = rpc(s2, 4, "tasks/cancel", {"taskId": t2}); print("session 2 tasks/cancel:", json.dumps(c)[:200])
time.sleep(2)
o = rpc(s1, 5, "tasks/get", {"taskId": t2}); print("session 1 sees its task:", o.get("result", {}).get("status"))
print("READ" if "VICTIM_PRIVATE_OUTPUT_31" in json.dumps(g) else "noread", "CANCELLED" if o.get("result", {}).get("status") == "cancelled" else "notcancelled")
