# Scripted fake Anthropic Messages API. argv: port script.json logfile
# script.json: list of responses; each is list of blocks: {"text":..} or {"tool":name,"input":{...}}
import json, sys, http.server, threading, itertools
port=int(sys.argv[1]); script=json.load(open(sys.argv[2])); log=open(sys.argv[3],'a')
idx=[0]; lock=threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version='HTTP/1.1'
    def log_message(self,*a): pass
    def do_POST(self):
        n=int(self.headers.get('content-length',0)); body=self.rfile.read(n)
        with lock:
            i=idx[0]; idx[0]+=1
        log.write(json.dumps({"path":self.path,"i":i,"body":body.decode('utf-8','replace')})+"\n"); log.flush()
        blocks = script[i] if i < len(script) else [{"text":"done"}]
        ev=[]
        def e(t,d): ev.append(f"event: {t}\ndata: {json.dumps(d)}\n\n")
        e("message_start",{"type":"message_start","message":{"id":"msg_%d"%i,"type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":None,"usage":{"input_tokens":10,"output_tokens":1}}})
        stop="end_turn"
        for k,b in enumerate(blocks):
            if "text" in b:
                e("content_block_start",{"type":"content_block_start","index":k,"content_block":{"type":"text","text":""}})
                e("content_block_delta",{"type":"content_block_delta","index":k,"delta":{"type":"text_delta","text":b["text"]}})
            else:
                stop="tool_use"
                e("content_block_start",{"type":"content_block_start","index":k,"content_block":{"type":"tool_use","id":"toolu_%d_%d"%(i,k),"name":b["tool"],"input":{}}})
                e("content_block_delta",{"type":"content_block_delta","index":k,"delta":{"type":"input_json_delta","partial_json":json.dumps(b["input"])}})
            e("content_block_stop",{"type":"content_block_stop","index":k})
        e("message_delta",{"type":"message_delta","delta":{"stop_reason":stop,"stop_sequence":None},"usage":{"output_tokens":5}})
        e("message_stop",{"type":"message_stop"})
        data="".join(ev).encode()
        self.send_response(200); self.send_header('content-type','text/event-stream'); self.send_header('content-length',str(len(data))); self.end_headers(); self.wfile.write(data)
http.server.ThreadingHTTPServer(('127.0.0.1',port),H).serve_forever()
