"""moto's server for the AWS controller on testenv, with one JSON line per AWS call (service,
operation, HTTP status, and the error body of a failure) in CALL_LOG, and two test hooks:
- POST /_kelp/ssm-put {"name": "value"}: writes /aws/... SSM parameters (PutParameter
  refuses those names);
- POST /_kelp/ice ["c6a.large", ...]: from then on, a CreateFleet whose overrides are all of
  these types gets EC2's answer for no capacity (InsufficientInstanceCapacity for each
  override, no instance), which moto never gives on its own;
- POST /_kelp/interrupt {"queue": "kelp", "instance": "i-..."}: puts EC2's two-minute spot
  interruption warning for the instance on the interruption queue, as EventBridge would.
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

ICE = set()


def set_ice(environ, start_response):
    n = int(environ.get("CONTENT_LENGTH") or 0)
    ICE.clear()
    ICE.update(json.loads(environ["wsgi.input"].read(n)))
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps(sorted(ICE)).encode()]


def iced_fleet(q):
    """EC2's CreateFleet answer when every override is of a type in ICE, else None."""
    overrides = {}
    for key, values in q.items():
        m = re.match(r"LaunchTemplateConfigs\.(\d+)\.(LaunchTemplateSpecification\.\w+|Overrides\.(\d+)\.(\w+))$", key)
        if m:
            overrides.setdefault(m.group(1), {"spec": {}, "overrides": {}})
            entry = overrides[m.group(1)]
            if m.group(3):
                entry["overrides"].setdefault(m.group(3), {})[m.group(4)] = values[0]
            else:
                entry["spec"][m.group(2).split(".")[1]] = values[0]
    items = [(c, o) for c in overrides.values() for o in c["overrides"].values()]
    if not ICE or not items or any(o.get("InstanceType") not in ICE for _, o in items):
        return None
    capacity_type = (q.get("TargetCapacitySpecification.DefaultTargetCapacityType") or ["on-demand"])[0]
    esc = lambda v: v.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    errors = []
    for c, o in items:
        spec = "".join(f"<{k[0].lower() + k[1:]}>{esc(v)}</{k[0].lower() + k[1:]}>" for k, v in c["spec"].items())
        over = "".join(f"<{k[0].lower() + k[1:]}>{esc(v)}</{k[0].lower() + k[1:]}>" for k, v in o.items())
        errors.append(
            "<item><launchTemplateAndOverrides>"
            f"<launchTemplateSpecification>{spec}</launchTemplateSpecification><overrides>{over}</overrides>"
            f"</launchTemplateAndOverrides><lifecycle>{esc(capacity_type)}</lifecycle>"
            "<errorCode>InsufficientInstanceCapacity</errorCode>"
            f"<errorMessage>We currently do not have sufficient {esc(o.get('InstanceType', ''))} capacity in the Availability Zone you requested.</errorMessage></item>")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<CreateFleetResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
            f"<requestId>kelp-ice-{int(time.time() * 1000)}</requestId><fleetId>fleet-kelp-ice</fleetId>"
            f"<errorSet>{''.join(errors)}</errorSet><fleetInstanceSet/></CreateFleetResponse>").encode()


def interrupt(environ, start_response):
    from moto.sqs.models import sqs_backends
    n = int(environ.get("CONTENT_LENGTH") or 0)
    req = json.loads(environ["wsgi.input"].read(n))
    region = req.get("region", "us-west-2")
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    body = {
        "version": "0", "id": f"kelp-{int(time.time() * 1000)}",
        "detail-type": "EC2 Spot Instance Interruption Warning", "source": "aws.ec2",
        "account": "123456789012", "time": now, "region": region,
        "resources": [f"arn:aws:ec2:{region}:123456789012:instance/{req['instance']}"],
        "detail": {"instance-id": req["instance"], "instance-action": "terminate"},
    }
    sqs_backends["123456789012"][region].send_message(req["queue"], json.dumps(body))
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps(body).encode()]


def logged(environ, start_response):
    if environ.get("PATH_INFO") == "/_kelp/ssm-put":
        return put_reserved_ssm(environ, start_response)
    if environ.get("PATH_INFO") == "/_kelp/ice":
        return set_ice(environ, start_response)
    if environ.get("PATH_INFO") == "/_kelp/interrupt":
        return interrupt(environ, start_response)
    n = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(n) if n else b""
    environ["wsgi.input"] = io.BytesIO(body)
    auth = environ.get("HTTP_AUTHORIZATION", "")
    m = re.search(r"Credential=([^/]+)/\d+/([^/]+)/([^/]+)/", auth)
    who, region, service = (m.group(1), m.group(2), m.group(3)) if m else ("?", "?", "?")
    op = environ.get("HTTP_X_AMZ_TARGET", "")
    q = {}
    if not op:
        q = urllib.parse.parse_qs(body.decode("utf-8", "replace")) if body else {}
        q.update(urllib.parse.parse_qs(environ.get("QUERY_STRING", "")))
        op = (q.get("Action") or [""])[0]
        dry = (q.get("DryRun") or [""])[0]
    else:
        dry = ""
    if not op:
        op = environ["REQUEST_METHOD"] + " " + environ.get("PATH_INFO", "")
    if op == "CreateFleet" and dry != "true":
        answer = iced_fleet(q)
        if answer is not None:
            with lock:
                logf.write(json.dumps({"t": time.strftime("%H:%M:%S"), "key": who, "service": service, "region": region,
                                       "op": op, "status": 200, "ice": sorted(ICE)}) + "\n")
            start_response("200 OK", [("Content-Type", "text/xml")])
            return [answer]
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
