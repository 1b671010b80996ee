#!/usr/bin/env python3
"""Minimal MCP stdio client. Usage:
mcpc.py --answer accept|decline|cancel|ignore|noelicit [--content JSON] [--log FILE] -- hands mcp ARGS...
reads tool calls as JSON lines from CALLS env/file: [{"name":..,"arguments":{..}}, ...]
"""
import json, subprocess, sys, os, time, threading, select, argparse
ap = argparse.ArgumentParser()
ap.add_argument('--answer', default='accept')
ap.add_argument('--content', default='{}')
ap.add_argument('--calls', required=True)
ap.add_argument('--timeout', type=float, default=60)
ap.add_argument('--raw', action='store_true', help='calls file is raw JSON text lines for arguments')
ap.add_argument('--on-elicit', default=None, help='shell cmd run before answering')
ap.add_argument('cmd', nargs=argparse.REMAINDER)
a = ap.parse_args()
cmd = a.cmd[1:] if a.cmd and a.cmd[0] == '--' else a.cmd
env = dict(os.environ)
p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr, env=env)
def send(obj=None, raw=None):
    line = raw if raw is not None else json.dumps(obj)
    p.stdin.write((line + "\n").encode()); p.stdin.flush()
buf = b''
def recv(deadline):
    global buf
    while True:
        if b'\n' in buf:
            line, buf = buf.split(b'\n', 1)
            if line.strip():
                return json.loads(line)
            continue
        rem = deadline - time.time()
        if rem <= 0: return None
        r, _, _ = select.select([p.stdout], [], [], rem)
        if not r: return None
        chunk = os.read(p.stdout.fileno(), 65536)
        if not chunk: return None
        buf += chunk
caps = {} if a.answer == 'noelicit' else {"elicitation": {"form": {}}}
send({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":caps,"clientInfo":{"name":"rt","version":"1"}}})
dl = time.time()+30
while True:
    m = recv(dl)
    if m is None: print("NO INIT"); sys.exit(2)
    if m.get('id') == 0: break
send({"jsonrpc":"2.0","method":"notifications/initialized"})
calls = open(a.calls).read().splitlines()
nid = 1
for c in calls:
    if not c.strip(): continue
    if a.raw:
        # raw line: full params JSON text of tools/call spliced verbatim
        send(raw='{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}' % (nid, c))
    else:
        send({"jsonrpc":"2.0","id":nid,"method":"tools/call","params":json.loads(c)})
    dl = time.time()+a.timeout
    while True:
        m = recv(dl)
        if m is None: print(f"CALL {nid}: TIMEOUT/EOF"); break
        if m.get('method') == 'elicitation/create':
            print("ELICIT:", json.dumps(m['params'], indent=1))
            if a.on_elicit: subprocess.run(a.on_elicit, shell=True, timeout=30)
            if a.answer in ('accept','decline','cancel'):
                res = {"action": a.answer}
                if a.answer == 'accept': res["content"] = json.loads(a.content)
                send({"jsonrpc":"2.0","id":m['id'],"result":res})
            elif a.answer == 'error':
                send({"jsonrpc":"2.0","id":m['id'],"error":{"code":-32601,"message":"nope"}})
            # ignore: never answer
            continue
        if 'method' in m and 'id' in m:
            print("SERVER REQ:", json.dumps(m)); send({"jsonrpc":"2.0","id":m['id'],"result":{}}); continue
        if 'method' in m:
            if m['method'] not in ('notifications/progress','notifications/message'):
                print("NOTIF:", m['method'])
            continue
        if m.get('id') == nid:
            print(f"RESULT {nid}:", json.dumps(m.get('result', m.get('error')), indent=1)[:400000]); break
    nid += 1
p.stdin.close()
try: p.wait(10)
except: p.kill()
