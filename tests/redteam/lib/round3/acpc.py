# minimal ACP client. argv: hands_bin cwd promptfile(json list of prompts) [perm policy: allow|always|reject|none] [extra args...]
import json, sys, subprocess, os, threading, time
HB=sys.argv[1]; cwd=sys.argv[2]; prompts=json.load(open(sys.argv[3])); policy=sys.argv[4] if len(sys.argv)>4 else 'allow'
extra=sys.argv[5:]
mode=os.environ.get('ACP_MODE')
p=subprocess.Popen([HB,'acp']+extra,stdin=subprocess.PIPE,stdout=subprocess.PIPE,stderr=open(os.environ.get('ACP_ERR','/dev/null'),'w'),cwd=os.environ.get('ACP_PROC_CWD',cwd))
nid=[0]
def send(o): p.stdin.write((json.dumps(o)+"\n").encode()); p.stdin.flush()
def req(m,params):
    nid[0]+=1; send({"jsonrpc":"2.0","id":nid[0],"method":m,"params":params}); return nid[0]
deadline=time.time()+float(os.environ.get('ACP_TIMEOUT','40'))
def wait(i):
    while time.time()<deadline:
        l=p.stdout.readline()
        if not l: return None
        o=json.loads(l); print("<<",json.dumps(o)[:3000],flush=True)
        if o.get('method')=='session/request_permission':
            opts=o['params']['options']
            pick=None
            for op in opts:
                if policy=='allow' and op['kind']=='allow_once': pick=op['optionId']
                if policy=='always' and op['kind']=='allow_always': pick=op['optionId']
                if policy=='reject' and op['kind'].startswith('reject'): pick=op['optionId']
            if policy=='none': continue
            send({"jsonrpc":"2.0","id":o['id'],"result":{"outcome":{"outcome":"selected","optionId":pick}}})
        if o.get('id')==i and 'method' not in o: return o
i=req('initialize',{"protocolVersion":1,"clientCapabilities":{}}); wait(i)
i=req('session/new',{"cwd":cwd,"mcpServers":[]}); r=wait(i)
if 'error' in r: print("SESSION_ERR",json.dumps(r)); sys.exit(3)
sid=r['result']['sessionId']
if mode:
    i=req('session/set_mode',{"sessionId":sid,"modeId":mode}); wait(i)
for pr in prompts:
    i=req('session/prompt',{"sessionId":sid,"prompt":[{"type":"text","text":pr}]}); wait(i)
p.stdin.close(); p.wait(timeout=10)
