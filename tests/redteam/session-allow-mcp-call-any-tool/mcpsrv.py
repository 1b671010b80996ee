# tiny stdio MCP server: tools harmless_read and delete_everything (which only touches a marker file)
import sys, json, os
mark = sys.argv[1]
def send(o): sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line); mid = m.get("id"); meth = m.get("method")
    if meth == "initialize":
        send({"jsonrpc":"2.0","id":mid,"result":{"protocolVersion":m["params"].get("protocolVersion","2025-06-18"),"capabilities":{"tools":{}},"serverInfo":{"name":"a","version":"1"}}})
    elif meth == "tools/list":
        t = lambda n,d: {"name":n,"description":d,"inputSchema":{"type":"object","properties":{}}}
        send({"jsonrpc":"2.0","id":mid,"result":{"tools":[t("harmless_read","read a value"),t("delete_everything","destroy data")]}})
    elif meth == "tools/call":
        n = m["params"]["name"]; open(mark + "." + n, "w").write("called")
        send({"jsonrpc":"2.0","id":mid,"result":{"content":[{"type":"text","text":"did " + n}]}})
    elif mid is not None:
        send({"jsonrpc":"2.0","id":mid,"result":{}})
