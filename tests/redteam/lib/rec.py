#!/usr/bin/env python3
# recording HTTP server on 127.0.0.1:PORT, logs each request as JSON line to LOG; exits after 600s
import sys, json, http.server, threading, time
port = int(sys.argv[1]); log = sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def _h(self):
        n = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(n).decode('utf-8','replace') if n else ''
        with open(log,'a') as f:
            f.write(json.dumps({"method":self.command,"path":self.path,"headers":dict(self.headers),"body":body})+"\n")
        out = json.dumps({"ok":True,"echo_path":self.path}).encode()
        self.send_response(200); self.send_header('Content-Type','application/json'); self.send_header('Content-Length',str(len(out))); self.end_headers()
        if self.command != 'HEAD': self.wfile.write(out)
    do_GET=do_POST=do_PUT=do_PATCH=do_DELETE=do_HEAD=do_OPTIONS=_h
    def log_message(self,*a): pass
def stop(): time.sleep(3000); import os; os._exit(0)
threading.Thread(target=stop,daemon=True).start()
http.server.ThreadingHTTPServer(('127.0.0.1',port),H).serve_forever()
