import sys, json, time, urllib.request
base, tok, root = sys.argv[1], sys.argv[2], sys.argv[3]
H={'Authorization':'Bearer '+tok,'Content-Type':'application/json'}
def req(m,p,b=None):
    r=urllib.request.Request(base+p,method=m,headers=H,data=None if b is None else json.dumps(b).encode())
    try:
        with urllib.request.urlopen(r,timeout=20) as f: return f.status, json.loads(f.read() or b'null')
    except urllib.error.HTTPError as e: return e.code, e.read().decode()[:300]
def turn(sid, text, policy):
    req('POST',f'/v1/sessions/{sid}/messages',{"text":text}); t=time.time()+25; seen=set()
    while time.time()<t:
        s,info=req('GET',f'/v1/sessions/{sid}')
        for a in info.get('pending_approvals') or []:
            aid=a['approval_id']
            if aid in seen: continue
            seen.add(aid); ans=policy(a); print("ASKED", json.dumps(a)[:200], "->", ans, req('POST',f'/v1/sessions/{sid}/approvals/{aid}',ans)[0], flush=True)
        if not info.get('running_turn') and time.time()>t-23: return
        time.sleep(0.2)
s,r=req('POST','/v1/sessions',{"root":root,"mode":"plan"}); A=r['id']; print("mode",r.get('mode'))
turn(A,"t1",lambda a:{"approve":True,"scope":"session"})          # exit_plan_mode PLAN-1 approved "for the session"
print("mode now", req('GET',f'/v1/sessions/{A}')[1].get('mode'))
print("patch plan", req('PATCH',f'/v1/sessions/{A}',{"mode":"plan"})[0])
turn(A,"t2",lambda a:{"approve":False,"reason":"no"})             # exit_plan_mode PLAN-2 must be asked
print("mode now", req('GET',f'/v1/sessions/{A}')[1].get('mode'))
print("patch build", req('PATCH',f'/v1/sessions/{A}',{"mode":"build"})[0])
turn(A,"t3",lambda a:{"approve":True,"scope":"session"} if a['tool'] in('write','write_file') else {"approve":False,"reason":"no"})  # write alias allowed for session; then edit_file/apply_patch
