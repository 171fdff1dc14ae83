// The Summary section: the verdict (leaks by class and memory kind, growth
// suspects, worst fragmentation, pause share), what ran (command, duration,
// exit), and the processes of the report.
'use strict';

// The worst fragmentation ratio of a process: the host heap's at the end or
// a device allocator's worst over the run, whichever is higher.
GS.worstFrag = function (p) {
  var f = p.fragmentation || {}, best = { ratio: 0, where: 'host heap' };
  if (f.heap && f.heap.ratio > best.ratio) best = { ratio: f.heap.ratio, where: 'host heap (at exit)' };
  (f.devices || []).forEach(function (d) {
    if (d.worst_ratio > best.ratio) {
      best = { ratio: d.worst_ratio, where: 'device ' + d.device + ' ' + GS.allocName(d.allocator) + ' at ' + GS.fmtNs(d.worst_t_ns) };
    }
  });
  return best;
};

function cellText(c) {
  if (!c || !c.blocks) return '–';
  return GS.fmtBytes(c.bytes) + ' in ' + GS.fmtCount(c.blocks) + (c.blocks === 1 ? ' block' : ' blocks');
}

function leakTable(summary) {
  var head = GS.el('tr', null, GS.el('th', null, 'class'),
    GS.kinds.concat(['total']).map(function (k) { return GS.el('th', null, k); }));
  var rows = GS.classes.map(function (cls) {
    var s = summary[cls] || {};
    var bad = (cls === 'definite' || cls === 'indirect') && s.total && s.total.blocks > 0;
    return GS.el('tr', { class: bad ? 'bad' : null, 'data-class': cls }, GS.el('th', null, cls),
      GS.kinds.concat(['total']).map(function (k) { return GS.el('td', { class: 'num' }, cellText(s[k])); }));
  });
  return GS.el('table', { class: 'grid summary-leaks' }, GS.el('thead', null, head), GS.el('tbody', null, rows));
}

function badge(label, value, bad, detail) {
  return GS.el('div', { class: 'badge' + (bad ? ' bad' : ' ok') },
    GS.el('div', { class: 'badge-label' }, label),
    GS.el('div', { class: 'badge-value' }, value),
    detail ? GS.el('div', { class: 'badge-detail' }, detail) : null);
}

// What the leak badge and the processes table count: gateCount's bytes,
// the lost bytes of every site with a definite or indirect block (gcspy
// check's default), possible ones of those sites included.
var LEAK_LABEL = 'leaked (sites with definite or indirect blocks)';

// The leak badge. Without a scan nothing rules a leak out: the badge says
// so in red, never a green "0 bytes"; a trace that ended by exec had no
// leak verdict to give (the new image's trace has it) and is shown neutral.
function leakBadge(p, di, blocks) {
  var nf = p.summary['not-freed'].total;
  if (p.leak_status === 'no-scan') {
    return GS.el('div', { class: 'badge bad no-scan' },
      GS.el('div', { class: 'badge-label' }, LEAK_LABEL),
      GS.el('div', { class: 'badge-value' }, 'unknown: no leak scan'),
      GS.el('div', { class: 'badge-detail' }, 'the process ended without one (killed, _exit, or the scan was skipped or off); ' +
        GS.fmtBytes(nf.bytes) + ' in ' + GS.fmtCount(nf.blocks) + ' blocks not freed'));
  }
  if (p.leak_status === 'exec') {
    var rel = p.released_by_exec || { bytes: 0, blocks: 0 };
    return GS.el('div', { class: 'badge neutral exec' },
      GS.el('div', { class: 'badge-label' }, LEAK_LABEL),
      GS.el('div', { class: 'badge-value' }, 'ended by exec'),
      GS.el('div', { class: 'badge-detail' }, 'a clean end with no scan: the exec released ' + GS.fmtBytes(rel.bytes) + ' in ' +
        GS.fmtCount(rel.blocks) + ' blocks; the new image\'s trace has the verdict'));
  }
  var sup = 0;
  ['definite', 'indirect', 'possible'].forEach(function (c) { sup += (p.suppressed[c] || {}).blocks || 0; });
  return badge(LEAK_LABEL, GS.fmtBytes(di), blocks > 0,
    GS.fmtCount(blocks) + ' blocks; sites only possible ' + GS.fmtBytes(possible(p)) +
    (sup ? '; ' + GS.fmtCount(sup) + ' blocks suppressed, apart' : ''));
}

// Fragmentation in bytes wasted, red only when the findings call it
// significant (docs/report-json.md, "Fragmentation"): a ratio over a few
// hundred KiB of free space says nothing. Older documents: the ratio.
function fragBadge(p, wf) {
  if (!p.findings) return badge('worst fragmentation', GS.fmtPct(wf.ratio), wf.ratio > 0.5, wf.where);
  var ff = p.findings.filter(function (f) { return f.kind === 'fragmentation'; });
  if (!ff.length) return badge('fragmentation', 'none significant', false, 'less than 1 MiB or an eighth of the heap wasted');
  var w = ff.reduce(function (a, f) { return a + f.bytes; }, 0);
  return badge('fragmentation wasted', GS.fmtBytes(w), true,
    GS.fmtPct(ff[0].ratio) + ' of the free space outside the largest free piece' + (ff.length > 1 ? ' (' + ff.length + ' heaps)' : ''));
}

// What the gate counts by default, from the same sites as every other
// view: the unsuppressed sites not inherited from a parent whose worst
// class is definite or indirect, with all their lost bytes (older
// documents without sites: the summary less what was suppressed).
function gateCount(p) {
  var c = { bytes: 0, blocks: 0 };
  if (!p.sites) {
    ['definite', 'indirect'].forEach(function (k) {
      c.bytes += p.summary[k].total.bytes - p.suppressed[k].bytes - p.inherited[k].bytes;
      c.blocks += p.summary[k].total.blocks - p.suppressed[k].blocks - p.inherited[k].blocks;
    });
    return c;
  }
  p.sites.forEach(function (s) {
    if (s.suppressed || s.inherited || (s.worst_class !== 'definite' && s.worst_class !== 'indirect')) return;
    c.bytes += s.lost.bytes;
    c.blocks += s.lost.blocks;
  });
  return c;
}

// The lost bytes of the sites that are possible at worst (unsuppressed).
function possible(p) {
  if (!p.sites) return p.summary.possible.total.bytes;
  return p.sites.reduce(function (a, s) {
    return a + (s.suppressed || s.inherited || s.worst_class !== 'possible' ? 0 : s.lost.bytes);
  }, 0);
}

function facts(p) {
  var rows = [];
  var add = function (k, v) { if (v !== null && v !== undefined && v !== '') rows.push(GS.el('tr', null, GS.el('th', null, k), GS.el('td', null, v))); };
  add('command', GS.el('code', { class: 'command' }, p.command || ''));
  add('executable', p.exe);
  add('process', 'pid ' + p.pid + (p.ppid !== null ? ', parent ' + p.ppid : '') + (p.forked ? ' (forked)' : '') +
    (p.host ? ' on ' + p.host : ''));
  if (p.rank !== null && p.rank !== undefined) add('rank', p.rank + ' of ' + p.world_size + ' (local ' + p.local_rank + ')');
  if (p.start_unix_ns) add('started', new Date(p.start_unix_ns / 1e6).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC'));
  add('duration', GS.fmtNs(p.duration_ns));
  if (p.exit) {
    add('exit', p.exit.how === 'signal' ? 'killed by signal ' + p.exit.status
      : p.exit.how === 'exec' ? 'exec ' + (p.exit.exec_path || '') : 'status ' + p.exit.status);
  }
  add('trace', p.complete ? p.trace + ' (complete)' : p.trace + ' (incomplete: ' + (p.damage || 'cut') + ')');
  if (p.malformed) add('malformed', p.problem + (p.problems > 1 ? ' (and ' + GS.fmtCount(p.problems - 1) + ' more)' : ''));
  if (p.stopped) add('tracing stopped', GS.fmtNs(p.stopped.t_ns) + ': ' + p.stopped.reason + ' (' + GS.fmtCount(p.stopped.dropped_events) + ' events dropped)');
  var e = p.events || {};
  add('events', GS.fmtCount(e.allocs) + ' allocations, ' + GS.fmtCount(e.frees) + ' frees, ' +
    GS.fmtBytes(e.bytes_allocated) + ' allocated, ' + GS.fmtCount(e.threads) + (e.threads === 1 ? ' thread' : ' threads'));
  var pk = p.peak || {};
  add('peak live', GS.kinds.filter(function (k) { return pk[k]; }).map(function (k) { return k + ' ' + GS.fmtBytes(pk[k]); }).join(', ') +
    (pk.rss ? '; RSS ' + GS.fmtBytes(pk.rss) : ''));
  if (p.leak_status === 'no-scan') add('leak classes from', 'no leak scan: nothing rules a leak out');
  if (p.leak_status === 'exec') add('leak classes from', 'no scan: the process ended by exec');
  if (p.last_scan) add('leak classes from', 'scan ' + p.last_scan.id + ' (' + p.last_scan.trigger + ', ' + p.last_scan.mode + ') at ' + GS.fmtNs(p.last_scan.t_start_ns));
  add('gcspy', p.gcspy_version);
  return GS.el('table', { class: 'facts' }, GS.el('tbody', null, rows));
}

// The findings first: one line each, as the JSON ranks them (real
// problems largest first, the folded import and loader noise after them).
function findingsList(p) {
  var all = p.findings || [];
  var real = all.filter(function (f) { return f.kind !== 'noise'; });
  var noise = all.filter(function (f) { return f.kind === 'noise'; });
  var box = GS.el('div', { class: 'findings' }, GS.el('h3', null, 'Findings'));
  if (!real.length) {
    box.appendChild(GS.el('p', { class: 'finding-none' }, p.leak_status === 'no-scan'
      ? 'No finding known: the trace has no leak scan, so leaks are not ruled out.'
      : 'No leak, no growth, no significant fragmentation.'));
  } else {
    box.appendChild(GS.el('ol', null, real.map(function (f) {
      return GS.el('li', { class: 'finding ' + f.kind, 'data-kind': f.kind }, f.line);
    })));
  }
  if (noise.length) {
    box.appendChild(GS.el('ul', { class: 'noise' }, noise.map(function (f) {
      return GS.el('li', { class: 'finding noise', 'data-kind': 'noise' }, f.line);
    })));
  }
  return box;
}

GS.renderSummary = function (body, doc, p, ctx) {
  if (!p.readable) {
    body.appendChild(GS.el('p', { class: 'error' }, 'This trace could not be read: ' + p.error));
    return;
  }
  body.appendChild(findingsList(p));
  var s = p.summary, gate = gateCount(p), di = gate.bytes, blocks = gate.blocks;
  var suspects = (p.growth.suspects || []).filter(function (g) { return !g.suppressed; });
  var wf = GS.worstFrag(p);
  var pz = p.pauses;
  var badges = GS.el('div', { class: 'badges' },
    leakBadge(p, di, blocks),
    badge('growth suspects', String(suspects.length), suspects.length > 0,
      suspects.length ? 'largest: ' + GS.fmtBytes(Math.round(suspects[0].rate)) + (suspects[0].unit === 'bytes/step' ? ' per step' : ' per s') : 'none'),
    fragBadge(p, wf),
    badge('time paused', GS.fmtPct(pz.share, 2), pz.share > 0.05,
      GS.fmtCount(pz.count) + ' pauses' + (pz.percentiles_ns ? ', longest ' + GS.fmtNs(pz.percentiles_ns.max) : '')));
  body.appendChild(badges);
  if (p.malformed) {
    body.appendChild(GS.el('p', { class: 'error malformed' }, 'Malformed trace: ' + p.problem +
      (p.problems > 1 ? ' (and ' + GS.fmtCount(p.problems - 1) + ' more problems)' : '') +
      '. The figures replay the records as they are.'));
  }
  if (p.verdict) body.appendChild(GS.el('p', { class: 'verdict ' + p.verdict.status }, p.verdict.line));
  var cols = GS.el('div', { class: 'cols' },
    GS.el('div', null, GS.el('h3', null, 'Leaks by class and memory kind'), leakTable(s),
      GS.el('p', { class: 'hint' }, 'Classes as memcheck has them, from the last leak scan; not-freed: live at exit, allocated after that scan (or no scan ran).')),
    GS.el('div', null, GS.el('h3', null, 'The process'), facts(p)));
  body.appendChild(cols);

  if (doc.processes.length > 1) {
    var t = doc.totals;
    body.appendChild(GS.el('h3', null, 'Processes (' + doc.processes.length + ')'));
    var rows = doc.processes.map(function (q, i) {
      if (!q.readable) return GS.el('tr', null, GS.el('td', null, q.trace), GS.el('td', { colspan: 4 }, q.error));
      return GS.el('tr', { class: i === ctx.index ? 'current' : null },
        GS.el('td', null, GS.el('a', { href: '#summary', on: { click: function (e) { e.preventDefault(); ctx.select(i); } } }, GS.procName(q, i))),
        GS.el('td', { class: 'num' + (q.leak_status === 'no-scan' ? ' no-scan' : '') },
          q.leak_status === 'no-scan' ? 'unknown: no leak scan' : q.leak_status === 'exec' ? 'ended by exec'
            : GS.fmtBytes(gateCount(q).bytes)),
        GS.el('td', { class: 'num' }, String((q.growth.suspects || []).length)),
        GS.el('td', { class: 'num' }, GS.fmtNs(q.duration_ns)),
        GS.el('td', null, q.malformed ? 'malformed' : q.complete ? 'complete' : 'incomplete'));
    });
    body.appendChild(GS.el('table', { class: 'grid processes' },
      GS.el('thead', null, GS.el('tr', null, ['process', 'leaked', 'growth suspects', 'duration', 'trace'].map(function (h) { return GS.el('th', null, h); }))),
      GS.el('tbody', null, rows)));
    var all = doc.processes.reduce(function (a, q) { return a + (q.readable ? gateCount(q).bytes : 0); }, 0);
    body.appendChild(GS.el('p', null, 'All processes: ' + GS.fmtBytes(all) +
      ' ' + LEAK_LABEL + ', inherited blocks counted in their parent only' +
      (t.no_scan ? ', ' + t.no_scan + (t.no_scan === 1 ? ' process' : ' processes') + ' with no leak scan' : '') +
      ', ' + t.growth_suspects + ' growth suspects, ' +
      GS.fmtCount(t.pauses) + ' pauses, ' + GS.fmtCount(t.allocs) + ' allocations.'));
  }
  if (doc.symbol_problems && doc.symbol_problems.length) {
    body.appendChild(GS.el('details', { class: 'problems' }, GS.el('summary', null, 'Frames left as module+offset (' + doc.symbol_problems.length + ')'),
      GS.el('ul', null, doc.symbol_problems.map(function (m) { return GS.el('li', null, m); }))));
  }
};
