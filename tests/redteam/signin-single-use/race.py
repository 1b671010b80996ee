import sys,threading,http.client,json
port=int(sys.argv[1]); code=sys.argv[2]; out=[]
def go(body,hdr={}):
    c=http.client.HTTPConnection('127.0.0.1',port,timeout=10)
    h={'Content-Type':'application/json'}; h.update(hdr)
    c.request('POST','/v1/signin',body=body,headers=h); r=c.getresponse(); out.append((r.status,r.read()[:200]))
bodies=[json.dumps({"code":code})]*6
ts=[threading.Thread(target=go,args=(b,)) for b in bodies]
[t.start() for t in ts]; [t.join() for t in ts]
for o in out: print(o)
