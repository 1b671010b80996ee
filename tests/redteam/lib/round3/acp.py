import json, sys, subprocess, os, time
class ACP:
    def __init__(s, HB, err, args=(), cwd=None, env=None):
        s.p=subprocess.Popen([HB,'acp',*args],stdin=subprocess.PIPE,stdout=subprocess.PIPE,stderr=open(err,'w'),cwd=cwd,env=env)
        s.n=0; s.msgs=[]; s.perm=lambda o: "allow_once"
        r=s.call('initialize',{"protocolVersion":1,"clientCapabilities":{}})
    def send(s,o): s.p.stdin.write((json.dumps(o)+"\n").encode()); s.p.stdin.flush()
    def req(s,m,params):
        s.n+=1; s.send({"jsonrpc":"2.0","id":s.n,"method":m,"params":params}); return s.n
    def wait(s,i,timeout=40,hook=None):
        t=time.time()+timeout
        while time.time()<t:
            l=s.p.stdout.readline()
            if not l: return None
            o=json.loads(l); s.msgs.append(o); print("<<",json.dumps(o)[:2000],flush=True)
            if hook: hook(s,o)
            if o.get('method')=='session/request_permission':
                r=s.perm(o)
                if r is not None: s.send({"jsonrpc":"2.0","id":o['id'],**r}) if isinstance(r,dict) else s.send({"jsonrpc":"2.0","id":o['id'],"result":{"outcome":{"outcome":"selected","optionId":r}}})
            if o.get('id')==i and 'method' not in o: return o
    def call(s,m,params,**kw): return s.wait(s.req(m,params),**kw)
    def new(s,cwd): return s.call('session/new',{"cwd":cwd,"mcpServers":[]})
    def prompt(s,sid,text,**kw): return s.call('session/prompt',{"sessionId":sid,"prompt":[{"type":"text","text":text}]},**kw)
    def close(s):
        try: s.p.stdin.close(); s.p.wait(10)
        except Exception: s.p.kill()
