# drives hands serve's session API: answers approvals by a policy, logs what was asked
import sys, json, time, urllib.request
base, tok, root = sys.argv[1], sys.argv[2], sys.argv[3]
H={'Authorization':'Bearer '+tok,'Content-Type':'application/json'}
def req(m,p,b=None):
    r=urllib.request.Request(base+p,method=m,headers=H,data=None if b is None else json.dumps(b).encode())
    try:
        with urllib.request.urlopen(r,timeout=20) as f: return f.status, json.loads(f.read() or b'null')
    except urllib.error.HTTPError as e: return e.code, e.read().decode()[:300]
def turn(sid, text, policy):
    s,r=req('POST',f'/v1/sessions/{sid}/messages',{"text":text}); 
    t=time.time()+25; seen=set()
    while time.time()<t:
        s,info=req('GET',f'/v1/sessions/{sid}')
        for a in info.get('pending_approvals') or []:
            aid=a.get('approval_id') or a.get('id')
            if aid in seen: continue
            seen.add(aid); ans=policy(a)
            print("ASKED", sid[:6], json.dumps(a)[:300], "->", ans, flush=True)
            print("  answer:", req('POST',f'/v1/sessions/{sid}/approvals/{aid}',ans), flush=True)
        if not info.get('running_turn') and time.time()>t-23: return
        time.sleep(0.2)
    print("TURN TIMEOUT")
def new():
    s,r=req('POST','/v1/sessions',{"root":root}); print("new",s,str(r)[:200]); return r['id']
A=new()
turn(A,"t1",lambda a:{"approve":True,"scope":"session"})   # bash touch s1 -> allow for session
deny=lambda a:{"approve":False,"reason":"no"}
turn(A,"t2",deny)   # bash s2 (unasked expected), terminal_start, write_file, bash_output-like, spawn_process
print("patch plan", req('PATCH',f'/v1/sessions/{A}',{"mode":"plan"}))
turn(A,"t3",deny)   # exit_plan_mode
print("patch build", req('PATCH',f'/v1/sessions/{A}',{"mode":"build"}))
turn(A,"t4",deny)   # bash s3 after mode change
B=new()
turn(B,"t5",deny)   # bash b1 in another session
