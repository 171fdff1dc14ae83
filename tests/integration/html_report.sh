#!/usr/bin/env bash
# The HTML report's file, without a browser (html_browser.sh opens it):
#   - the gcspy-data slot parses to exactly the --format json document (with
#     the page's default of 100 groups per class);
#   - markup, U+2028/U+2029 and comment openers from a trace never appear raw
#     in the page (command line and markers of a mkdevtrace trace carry them)
#     and come back unchanged from the JSON;
#   - self-contained: no external script, stylesheet, image or font, and the
#     Content-Security-Policy lists exactly the page's inline scripts by hash
#     (so they run) and allows no network;
#   - the extra data: one object per process, snapshots, the device's map
#     with both layers, growth per step for each suspect, every pause;
#   - from standard input: the page's data and extra slots are those of the
#     page made from the file (the trace is read once, in one pass);
#   - several traces, the second from standard input, an unwritable output.
set -u
cd "$(dirname "$0")/../.." || exit 2
G=build/gcspy H=build/tests/html PY=/usr/bin/python3
[ -x "$G" ] && [ -x "$H/mkdevtrace" ] || { echo "not built"; exit 1; }
T=$(mktemp -d) && trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

A1='<script>window.__pwned=1</script>'
A2=$(printf 'line\xe2\x80\xa8sep\xe2\x80\xa9para')
A3='&amp; </SCRIPT > <!-- <script'
"$H/mkdevtrace" "$T/dev.trace" 40 "$A1" "$A2" "$A3" || fail "mkdevtrace"
"$G" report --format html -o "$T/dev.html" "$T/dev.trace" || fail "report html"
"$G" report --format json --max-groups 100 -o "$T/dev.json" "$T/dev.trace" || fail "report json"
"$H/mkdevtrace" "$T/two.trace" 12 || fail "mkdevtrace two"

$PY - "$T/dev.html" "$T/dev.json" "$A1" "$A2" "$A3" <<'X' || fail "page contents"
import base64, hashlib, json, re, sys
page = open(sys.argv[1], 'rb').read()
ref = json.load(open(sys.argv[2]))
args = sys.argv[3:]
text = page.decode('utf-8')

def slot(name):
    m = re.search(r'<script type="application/json" id="%s">(.*?)</script>' % name, text, re.S)
    assert m, "no %s slot" % name
    return m.group(1)

data = slot('gcspy-data')
assert json.loads(data) == ref, "the data slot differs from --format json"
for ch in ('<', '>', '&', '\u2028', '\u2029'):
    assert ch not in data, "raw %r in the data slot" % ch
    assert ch not in slot('gcspy-extra'), "raw %r in the extra slot" % ch
for a in args:
    assert a.encode() not in page, "raw trace text in the page: %r" % a
p = ref['processes'][0]
assert p['argv'][-3:] == args, p['argv']
labels = [m['label'] for m in p['timeline']['markers'] if m['kind'] == 'user']
assert labels[:3] == args, labels

# exactly six script elements: the two data slots and four scripts
scripts = re.findall(r'<script([^>]*)>(.*?)</script>', text, re.S)
assert len(scripts) == 6, len(scripts)
code = [body for attrs, body in scripts if 'application/json' not in attrs]
assert len(code) == 4 and all(attrs.strip() == '' for attrs, body in scripts if 'application/json' not in attrs)
# nothing loaded from anywhere
for pat in (r'<script[^>]+src=', r'<link\b', r'<img\b', r'<iframe\b', r'@import', r'url\(\s*["\']?https?:'):
    assert not re.search(pat, text, re.I), "external reference: " + pat
m = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', text)
assert m, "no CSP"
csp = dict((d.strip().split(' ', 1) + [''])[:2] for d in m.group(1).split(';'))
want = sorted("'sha256-%s'" % base64.b64encode(hashlib.sha256(c.encode()).digest()).decode() for c in code)
assert sorted(csp['script-src'].split()) == want, "CSP hashes do not match the scripts"
assert csp['default-src'] == "'none'" and csp['connect-src'] == "'none'", csp

# the extra data
x = json.loads(slot('gcspy-extra'))
assert isinstance(x, list) and len(x) == 1 and x[0]['trace'] == p['trace'], x
x = x[0]
assert 'error' not in x, x.get('error')
snaps = x['snapshots_ns']
assert 2 <= len(snaps) <= 128 and snaps == sorted(snaps) and snaps[-1] == p['duration_ns'], snaps
maps = {m['name']: m for m in x['maps']}
assert set(maps) == {'host heap', 'device 0'}, set(maps)
dev = maps['device 0']
assert [l['name'] for l in dev['layers']] == ['cudaMalloc and driver', 'PyTorch caching allocator']
for l in dev['layers']:
    for k in ('occ', 'age', 'site'):
        assert len(base64.b64decode(l[k])) == dev['rows'] * len(snaps), (k, dev['rows'])
    assert len(l['live_bytes']) == len(snaps)
# mkdevtrace: four 20 MiB segments from the start, a 2 MiB one every 10 steps
# (40 steps: 4 of them); 8 MiB of weights and the kept outputs live at the end
cuda, torch = dev['layers']
assert cuda['live_bytes'][-1] == (4 * 20 + 4 * 2) << 20, cuda['live_bytes'][-1]
assert torch['live_bytes'][-1] == (8 << 20) + 40 * (512 << 10), torch['live_bytes'][-1]
occ = base64.b64decode(cuda['occ'])
assert any(occ) and not all(occ), "the cudaMalloc layer is all full or all empty"
st = x['device_state'][0]
assert st['cuda_layer'] and st['torch_layer'] and [s['when'] for s in st['states']] == ['peak', 'end']
end = st['states'][1]
assert len(end['segments']) == 8 and sum(s[1] for s in end['segments']) == (4 * 20 + 4 * 2) << 20
assert all(b[0] >= 0 for b in end['blocks']), "a PyTorch block outside every segment"
# growth: a sample per step for each suspect, at the step's marker as the
# analyzer's checkpoints are (step k sees the k - 1 blocks kept before it)
g = x['growth']
assert g['axis'] == 'step' and g['x'] == list(range(1, 41)), g['x']
sus = {s['stack_id']: s for s in p['growth']['suspects']}
assert set(s['stack_id'] for s in g['sites']) == set(sus), (g['sites'], list(sus))
keep = [s for s in p['growth']['suspects'] if s['stack'][0]['function'] == 'keep_outputs']
assert keep, p['growth']['suspects']
ys = [s for s in g['sites'] if s['stack_id'] == keep[0]['stack_id']][0]['live_bytes']
assert ys == [(512 << 10) * (k - 1) for k in range(1, 41)], ys
# pauses: every one the report counts
pz = x['pauses']
assert pz['count'] == p['pauses']['count'] == len(pz['t_ns']) == sum(pz['hist_count']), (pz['count'], p['pauses']['count'])
assert pz['t_ns'] == sorted(pz['t_ns']) and all(d > 0 for d in pz['duration_ns']), pz
assert [pz['kind_names'][k] for k in pz['kind']].count('python-gc') == p['pauses']['by_kind']['python-gc']['count']
# the heap's free space at the last snapshot is the report's at the end
# (mkdevtrace: five holes of 1008 bytes among 11 blocks of 1000)
hf, heap = x['host_frag'], p['fragmentation']['heap']
got = (hf['ratio'][-1], hf['largest_free'][-1], hf['free_bytes'][-1], hf['live_bytes'][-1])
assert got == (heap['ratio'], heap['largest_free'], heap['free_bytes'], heap['live_bytes']), (got, heap)
assert got == (1 - 1008 / 5040, 1008, 5040, 11000), got
names = {s['function'] for s in x['sites']}
assert {'init_weights', 'keep_outputs', 'cudaMalloc_segment'} <= names, names
X

# the pause list follows --cuda-pause-ms as the report's counts do
# (mkdevtrace: 1.5 ms cudaMalloc calls every 10 steps, 0.2 ms ones at the start)
for ms in 0.1 1 2; do
  "$G" report --format html --cuda-pause-ms $ms -o "$T/cp.html" "$T/dev.trace" || fail "report --cuda-pause-ms $ms"
  $PY - "$T/cp.html" $ms <<'X' || fail "pauses with --cuda-pause-ms $ms"
import json, re, sys
text = open(sys.argv[1]).read()
p = json.loads(re.search(r'id="gcspy-data">(.*?)</script>', text, re.S).group(1))['processes'][0]['pauses']
x = json.loads(re.search(r'id="gcspy-extra">(.*?)</script>', text, re.S).group(1))[0]['pauses']
want = {'0.1': 4 + 4 + 4, '1': 4 + 4, '2': 4}[sys.argv[2]]  # GC pauses + long calls + short calls
cuda = [d for d, k in zip(x['duration_ns'], x['kind']) if x['kind_names'][k] == 'cuda-sync']
assert x['count'] == p['count'] == want, (x['count'], p['count'], want)
assert len(cuda) == p['by_kind']['cuda-sync']['count'] and all(d >= float(sys.argv[2]) * 1e6 for d in cuda), cuda
X
done

# several traces: one extra object each, in order; the second from standard input
"$G" report --format html -o "$T/multi.html" "$T/dev.trace" - <"$T/two.trace" || fail "report two traces"
$PY - "$T/multi.html" <<'X' || fail "two traces"
import json, re, sys
text = open(sys.argv[1]).read()
data = json.loads(re.search(r'id="gcspy-data">(.*?)</script>', text, re.S).group(1))
x = json.loads(re.search(r'id="gcspy-extra">(.*?)</script>', text, re.S).group(1))
assert len(data['processes']) == 2 and len(x) == 2, (len(data['processes']), len(x))
assert 'error' not in x[0] and x[0]['maps'], x[0].keys()
assert 'error' not in x[1] and x[1]['maps'] and x[1]['trace'] == '-', x[1].keys()
X

# the page of a trace read from standard input is the page of the file:
# both slots equal but for the name the trace is given by
"$G" report --format html -o "$T/stdin.html" - <"$T/dev.trace" || fail "report html from standard input"
$PY - "$T/stdin.html" "$T/dev.html" "$T/dev.trace" <<'X' || fail "page from standard input"
import json, re, sys
def named(v, name):
    # the trace's name ("-" or the path) where the report gives it
    if isinstance(v, dict):
        return {k: 'TRACE' if k == 'trace' and x == name else named(x, name) for k, x in v.items()}
    if isinstance(v, list):
        return [named(x, name) for x in v]
    return v
def slots(path, name):
    text = open(path, encoding='utf-8').read()
    out = []
    for slot in ('gcspy-data', 'gcspy-extra'):
        m = re.search(r'<script type="application/json" id="%s">(.*?)</script>' % slot, text, re.S)
        assert m, slot
        out.append(named(json.loads(m.group(1)), name))
    return out
a, b = slots(sys.argv[1], '-'), slots(sys.argv[2], sys.argv[3])
x = a[1]
assert len(x) == 1 and 'error' not in x[0] and x[0]['maps'] and x[0]['growth']['sites'], x[0].keys()
assert a[0] == b[0], "the data slot differs from the file's page"
assert a[1] == b[1], "the extra slot differs from the file's page"
X

"$G" report --format html -o /nonexistent/dir/r.html "$T/dev.trace" 2>"$T/err"; rc=$?
[ $rc = 2 ] || fail "unwritable output: exit $rc"
[ "$(wc -l <"$T/err")" = 1 ] || fail "unwritable output: not one line: $(cat "$T/err")"
"$G" report --format htm "$T/dev.trace" 2>"$T/err"; rc=$?
[ $rc = 2 ] && grep -q "unknown format 'htm'" "$T/err" || fail "unknown format: exit $rc, $(cat "$T/err")"

[ $fails = 0 ] && echo "html_report: all passed"
[ $fails = 0 ]
