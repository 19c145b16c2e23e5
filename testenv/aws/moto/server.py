"""moto's server for the AWS controller on testenv, with one JSON line per AWS call (service,
operation, HTTP status, and the error body of a failure) in CALL_LOG, and POST
/_kelp/ssm-put to write /aws/... SSM parameters (PutParameter refuses those names).
usage: server.py PORT CALL_LOG"""
import io, json, os, re, sys, time, threading, urllib.parse
from moto.server import DomainDispatcherApplication, create_backend_app, MotoRequestHandler
from werkzeug.serving import run_simple

port = int(sys.argv[1]); logpath = sys.argv[2]
os.environ.setdefault("MOTO_PORT", str(port))
app = DomainDispatcherApplication(create_backend_app)
lock = threading.Lock()
logf = open(logpath, "a", buffering=1)

def put_reserved_ssm(environ, start_response):
    """POST /_kelp/ssm-put?region=R  body: {"name": value}. PutParameter refuses /aws/... names
    (AccessDeniedException), so write them into moto's SSM backend directly, in-process."""
    from moto.ssm.models import ssm_backends, Parameter
    from moto.core.utils import utcnow
    q = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
    region = (q.get("region") or ["us-west-2"])[0]
    n = int(environ.get("CONTENT_LENGTH") or 0)
    params = json.loads(environ["wsgi.input"].read(n))
    be = ssm_backends["123456789012"][region]
    for name, value in params.items():
        be._parameters[name].append(Parameter(account_id="123456789012", name=name, value=value,
            parameter_type="String", description=None, allowed_pattern=None, keyid=None,
            last_modified_date=utcnow(), version=len(be._parameters[name]) + 1, data_type="aws:ec2:image"))
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps(sorted(params)).encode()]

def logged(environ, start_response):
    if environ.get("PATH_INFO") == "/_kelp/ssm-put":
        return put_reserved_ssm(environ, start_response)
    n = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(n) if n else b""
    environ["wsgi.input"] = io.BytesIO(body)
    auth = environ.get("HTTP_AUTHORIZATION", "")
    m = re.search(r"Credential=([^/]+)/\d+/([^/]+)/([^/]+)/", auth)
    who, region, service = (m.group(1), m.group(2), m.group(3)) if m else ("?", "?", "?")
    op = environ.get("HTTP_X_AMZ_TARGET", "")
    if not op:
        q = urllib.parse.parse_qs(body.decode("utf-8", "replace")) if body else {}
        q.update(urllib.parse.parse_qs(environ.get("QUERY_STRING", "")))
        op = (q.get("Action") or [""])[0]
        dry = (q.get("DryRun") or [""])[0]
    else:
        dry = ""
    if not op:
        op = environ["REQUEST_METHOD"] + " " + environ.get("PATH_INFO", "")
    st = {}
    def sr(status, headers, exc_info=None):
        st["status"] = status
        return start_response(status, headers, exc_info)
    try:
        out = b"".join(app(environ, sr))
    except Exception as e:  # moto has no backend / crashed: werkzeug answers 500 with an HTML page
        with lock:
            logf.write(json.dumps({"t": time.strftime("%H:%M:%S"), "key": who, "service": service, "region": region, "op": op,
                                   "status": 500, "moto_exception": f"{type(e).__name__}: {e}"}) + "\n")
        raise
    code = int(st.get("status", "0").split()[0])
    rec = {"t": time.strftime("%H:%M:%S"), "key": who, "service": service, "region": region, "op": op, "status": code}
    if dry: rec["dryRun"] = dry
    if code >= 400 or code == 0:
        rec["resp"] = out.decode("utf-8", "replace")[:600]
        rec["req"] = body.decode("utf-8", "replace")[:400]
    with lock:
        logf.write(json.dumps(rec) + "\n")
    return [out]

run_simple("127.0.0.1", port, logged, threaded=True, request_handler=MotoRequestHandler)
