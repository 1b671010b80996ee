# minimal CDP client over a raw WebSocket (stdlib only). argv: ws_url file_to_read
import socket, os, base64, json, sys, struct, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); path = sys.argv[2]
s = socket.create_connection((u.hostname, u.port), 5); s.settimeout(8)
k = base64.b64encode(os.urandom(16)).decode()
s.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (u.path, u.hostname, u.port, k)).encode())
h = b''
while b'\r\n\r\n' not in h: h += s.recv(1)
print("handshake:", h.split(b'\r\n')[0].decode())
buf = b''
def send(o):
    d = json.dumps(o).encode(); m = os.urandom(4)
    hdr = bytes([0x81]) + (bytes([0x80 | len(d)]) if len(d) < 126 else bytes([0x80 | 126]) + struct.pack('>H', len(d)))
    s.sendall(hdr + m + bytes(b ^ m[i % 4] for i, b in enumerate(d)))
def rx(n):
    global buf
    while len(buf) < n:
        c = s.recv(65536)
        if not c: raise EOFError
        buf += c
    r, buf = buf[:n], buf[n:]; return r
def recv():
    b0, b1 = rx(2); n = b1 & 0x7f
    if n == 126: n = struct.unpack('>H', rx(2))[0]
    elif n == 127: n = struct.unpack('>Q', rx(8))[0]
    return json.loads(rx(n))
nid = [0]
def call(method, params=None, sid=None):
    nid[0] += 1; o = {"id": nid[0], "method": method, "params": params or {}}
    if sid: o["sessionId"] = sid
    send(o)
    t = time.time() + 8
    while time.time() < t:
        m = recv()
        if m.get("id") == nid[0]: return m
print("version:", call("Browser.getVersion").get("result", {}).get("product"))
t = call("Target.createTarget", {"url": "file://" + path}); print("createTarget:", json.dumps(t)[:200])
tid = t.get("result", {}).get("targetId")
if tid:
    a = call("Target.attachToTarget", {"targetId": tid, "flatten": True}); sid = a.get("result", {}).get("sessionId")
    time.sleep(1)
    r = call("Runtime.evaluate", {"expression": "document.body ? document.body.innerText : ''"}, sid)
    print("READ:", json.dumps(r.get("result", {}).get("result", {}).get("value"))[:200])
