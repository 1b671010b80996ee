import sys, http.server
port=int(sys.argv[1]); out=open(sys.argv[2],'ab')
class H(http.server.BaseHTTPRequestHandler):
    protocol_version='HTTP/1.1'
    def log_message(self,*a): pass
    def do_POST(self):
        n=int(self.headers.get('content-length',0)); b=self.rfile.read(n)
        out.write(b"\n=== "+self.path.encode()+b"\n"+str(self.headers).encode()+b"\n"+b+b"\n"); out.flush()
        self.send_response(200); self.send_header('content-type','application/x-protobuf'); self.send_header('content-length','0'); self.end_headers()
http.server.ThreadingHTTPServer(('127.0.0.1',port),H).serve_forever()
