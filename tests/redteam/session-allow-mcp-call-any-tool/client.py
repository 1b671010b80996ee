import sys, json, time, urllib.request
base, tok, root = sys.argv[1], sys.argv[2], sys.argv[3]
H={'Authorization':'Bearer '+tok,'Content-Type':'application/json'}
def req(m,p,b=None):
    r=urllib.request.Request(base+p,method=m,headers=H,data=None if b is None else json.dumps(b).encode())
    with urllib.request.urlopen(r,timeout=20) as f: return f.status, json.loads(f.read() or b'null')
s,r=req('POST','/v1/sessions',{"root":root}); A=r['id']
def turn(text, policy):
    req('POST',f'/v1/sessions/{A}/messages',{"text":text}); t=time.time()+25; seen=set()
    while time.time()<t:
        s,info=req('GET',f'/v1/sessions/{A}')
        for a in info.get('pending_approvals') or []:
            aid=a['approval_id']
            if aid in seen: continue
            seen.add(aid); ans=policy(a); print("ASKED", json.dumps(a)[:300], "->", ans, flush=True)
            req('POST',f'/v1/sessions/{A}/approvals/{aid}',ans)
        if not info.get('running_turn') and time.time()>t-23: return
        time.sleep(0.2)
turn("t1", lambda a: {"approve":True,"scope":"session"})   # allow the harmless call "for this session"
turn("t2", lambda a: {"approve":False,"reason":"no"})      # the destructive one must be asked
