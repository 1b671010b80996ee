import json,urllib.request,sys
U='http://127.0.0.1:18640/mcp'
def call(method,params,name=None,id=1):
    meta={"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}
    params=dict(params); params['_meta']={**params.get('_meta',{}),**meta}
    h={'authorization':'Bearer tok12345678','content-type':'application/json','accept':'application/json, text/event-stream','MCP-Protocol-Version':'2026-07-28','Mcp-Method':method}
    if name: h['Mcp-Name']=name
    r=urllib.request.Request(U,data=json.dumps({"jsonrpc":"2.0","id":id,"method":method,"params":params}).encode(),headers=h)
    try: b=urllib.request.urlopen(r,timeout=20).read().decode()
    except urllib.error.HTTPError as e: b=e.read().decode()
    for l in b.splitlines():
        if l.startswith('data:'): b=l[5:]
    try: return json.loads(b)
    except Exception: return b
