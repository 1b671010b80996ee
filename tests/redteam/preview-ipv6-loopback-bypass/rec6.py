#!/usr/bin/env python3
# a recorder on [::1]:PORT only (like a local service bound to the IPv6 loopback); logs each request line; exits after 180 s
import socket, sys, threading, time, os
port = int(sys.argv[1]); log = sys.argv[2]
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1); s.bind(("::1", port)); s.listen(16)
threading.Thread(target=lambda: (time.sleep(180), os._exit(0)), daemon=True).start()
while True:
    c, a = s.accept(); c.settimeout(2)
    try: d = c.recv(4096)
    except Exception: d = b''
    with open(log, 'a') as f: f.write("%s %r\n" % (a[0], d.split(b'\r\n')[0]))
    try: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    except Exception: pass
    c.close()
