"""The judgment of one PyTorch run of scripts/gpu-check.sh (examples/train.py
with a planted device leak, under the shim, on a GPU), from its report and
stderr alone:

  gpu_check_torch.py REPORT.json STDERR PLANT STEPS PLANT_LINE MODE

MODE is the run's allocator set-up, and says what the planted blocks must be:
  nocache     PYTORCH_NO_CUDA_MEMORY_CACHING=1, --cuda-leak: STEPS blocks of
              PLANT bytes from cudaMalloc, definite, at leak_cuda's line;
  aware       the caching allocator's default, --cached-leak: STEPS tensor
              blocks (allocator torch, sizes rounded up to 512), definite, at
              leak_cached's line; the trace holds caching-allocator snapshots;
  expandable  the same with expandable_segments:True (memory from cuMemMap):
              the same tensor leaks, and no VMM block is a leak (the mapped
              pages are the allocator's segments);
  async       backend:cudaMallocAsync (no snapshot exists): STEPS blocks of
              PLANT bytes from cudaMallocAsync, definite, at leak_cached's line.
Prints PASS/FAIL/SKIP/WARN/INFO lines; exit 1 on a failure.
"""
import json
import sys


def main():
    rep, err, plant, steps, line, mode = sys.argv[1:7]
    plant, steps = int(plant), int(steps)
    line = int(line) if line else None
    p = json.load(open(rep))['processes'][0]
    errtext = open(err, errors='replace').read()
    bad = []

    def out(st, msg):
        print('%s %s: %s' % (st, mode, msg))
        if st == 'FAIL':
            bad.append(msg)

    if 'gcspy: cupti: ' not in errtext:
        why = [x for x in errtext.splitlines() if 'CUPTI' in x or 'cupti' in x]
        out('WARN', 'CUPTI not attached: %s' % (why[0] if why else 'no line about it on stderr'))
    if not p.get('last_scan'):
        out('FAIL', 'no leak scan in the trace (%s)' % '; '.join(
            x for x in errtext.splitlines() if 'scan' in x)[:300])
    dev = [x for x in p['leaks'] if x['memory'] == 'device']
    fn = 'leak_cuda' if mode == 'nocache' else 'leak_cached'
    if mode in ('aware', 'expandable'):
        plant = (plant + 511) // 512 * 512  # the caching allocator rounds
        dev = [x for x in dev if x.get('allocator') == 'torch']
        ca = (p.get('fragmentation') or {}).get('caching_allocator') or {}
        if ca.get('snapshots'):
            out('PASS', '%d caching-allocator snapshots; %s' % (ca['snapshots'], [
                (d['device'], d['reason'], d['segments'], d['reserved_bytes'], d['allocated_blocks'],
                 d['cached_free_bytes'], d['events']) for d in ca.get('devices', [])]))
        else:
            out('FAIL', 'no caching-allocator snapshot in the trace')
    if mode == 'expandable':
        vmm = [x for x in p['leaks'] if x['memory'] == 'vmm'
               and x['class'] in ('definite', 'indirect', 'possible')]
        if vmm:
            out('FAIL', '%d VMM leak groups, %d bytes: the mapped pages taken for leaks' % (
                len(vmm), sum(x['bytes'] for x in vmm)))
    if mode == 'async':
        dev = [x for x in dev if x.get('allocator') != 'torch']
    planted = [x for x in dev if x['largest_block'] == plant and x['bytes'] == x['blocks'] * plant]
    by_class = {}
    for x in planted:
        by_class[x['class']] = by_class.get(x['class'], 0) + x['blocks']
    if by_class.get('definite', 0) == steps and len(by_class) == 1:
        out('PASS', '%d planted blocks of %d bytes, definite, device' % (steps, plant))
    else:
        out('FAIL', 'planted blocks by class %s, expected {definite: %d}; device leak groups: %s' % (
            by_class, steps, [(x['class'], x['bytes'], x['blocks'], x['largest_block']) for x in dev[:8]]))

    # Attribution: a Python frame of fn, at the planted line.
    native_only = 'native stacks only' in errtext
    for x in planted:
        if x['class'] != 'definite':
            continue
        pyf = [f for f in (x['stack'] or []) if f.get('python')]
        hit = [f for f in pyf if f.get('function') == fn and (f.get('file') or '').endswith('train.py')
               and (line is None or f.get('line') == line)]
        if hit:
            out('PASS', 'attributed to train.py:%s in %s' % (hit[0].get('line'), fn))
        elif not pyf and native_only:
            why = [e for e in errtext.splitlines() if 'native stacks only' in e][0]
            out('SKIP', 'attribution to the Python line: %s' % why.replace('gcspy: ', ''))
        else:
            out('FAIL', 'planted blocks not attributed to train.py:%s in %s; stack: %s' % (
                line, fn, [(f.get('function'), f.get('file'), f.get('line')) for f in (x['stack'] or [])][:12]))
        break

    others = [x for x in dev if x not in planted and x['class'] in ('definite', 'indirect', 'possible')]
    if others:
        out('WARN', '%d other unreachable device groups, %d bytes: %s' % (
            len(others), sum(x['bytes'] for x in others),
            [(x['class'], x['bytes'], x['blocks'], (x['stack'] or [{}])[0].get('function')) for x in others[:5]]))
    s = p['summary']
    out('INFO', 'device bytes: definite %d, reachable %d, not-freed %d; %d allocations, %d frees' % (
        s['definite']['device']['bytes'], s['reachable']['device']['bytes'], s['not-freed']['device']['bytes'],
        p['events']['allocs'], p['events']['frees']))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
