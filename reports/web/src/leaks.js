// The Leaks section: one row per allocation site (the report's sites: one
// allocation stack and memory kind, its classes side by side; older
// documents: the leak groups) in a table that sorts by any column and whose
// rows open to the whole stack with source files and lines, and a flame
// graph (d3-flame-graph) of the shown rows' bytes by stack, outermost frame
// at the bottom. A site shows the bytes of the classes ticked, its class
// column the worst of them.
'use strict';

var LEAK_COLS = [
  { key: 'class', label: 'class', get: function (l) { return GS.classes.indexOf(l.class); }, text: function (l) { return l.class; } },
  { key: 'memory', label: 'memory', get: function (l) { return GS.kinds.indexOf(l.memory); }, text: function (l) { return l.allocator === 'torch' ? l.memory + ' (tensor)' : l.memory; } },
  { key: 'bytes', label: 'bytes', num: true, get: function (l) { return l.bytes; }, text: function (l) { return GS.fmtBytes(l.bytes); } },
  { key: 'blocks', label: 'blocks', num: true, get: function (l) { return l.blocks; }, text: function (l) { return GS.fmtCount(l.blocks); } },
  { key: 'frame', label: 'top frame', get: function (l) { return topFrameText(l).toLowerCase(); }, text: function (l) { return topFrameText(l); },
    extra: function (l) { var py = GS.pythonCaller(l.stack); return py ? GS.el('div', { class: 'pycaller' }, py) : null; } },
];

function topFrameText(l) {
  if (!l.stack) return 'stack ' + l.stack_id + ' (not symbolized)';
  return l.stack.length ? GS.frameText(l.stack[0]) : '(empty stack)';
}

function stackList(l) {
  if (!l.stack) return GS.note('Not symbolized: beyond --max-groups.');
  return GS.el('ol', { class: 'stack', start: 0 }, l.stack.map(function (f) {
    return GS.el('li', { class: f.python ? 'py' : null },
      GS.el('span', { class: 'fn' }, f.function || '??'),
      f.file ? GS.el('span', { class: 'src' }, ' ' + f.file + (f.line ? ':' + f.line : '')) : null,
      f.module ? GS.el('span', { class: 'mod' }, ' ' + GS.basename(f.module) + (f.offset ? '+' + f.offset : '')) : null,
      f.inlined ? GS.el('span', { class: 'tag' }, ' inlined') : null,
      f.python ? GS.el('span', { class: 'tag' }, ' python') : null);
  }));
}

function leakDetail(l) {
  var fu = l.first_unreachable, bits = [];
  if (l.classes) {
    bits.push('by class: ' + GS.classes.filter(function (c) { return l.classes[c].blocks; }).map(function (c) {
      return c + ' ' + GS.fmtBytes(l.classes[c].bytes) + ' in ' + GS.fmtCount(l.classes[c].blocks);
    }).join(', '));
  }
  if (l.noise) bits.push('allocated by the ' + l.noise);
  bits.push('largest block ' + GS.fmtBytes(l.largest_block));
  if (l.suppressed) bits.push('suppressed by ' + l.suppressed);
  if (l.inherited) bits.push('inherited from the parent process');
  if (l.allocator === 'torch') bits.push("tensors' storage: blocks of PyTorch's caching allocator inside its CUDA segments");
  if (fu) {
    bits.push('unreachable since scan ' + fu.scan + ' at ' + GS.fmtNs(fu.t_ns) +
      (fu.steps && fu.steps[1] > fu.steps[0] ? ', during steps ' + (fu.steps[0] + 1) + '–' + fu.steps[1] : '') +
      (fu.first_marker ? ', between markers “' + fu.first_marker + '” and “' + fu.last_marker + '”' : '') +
      (fu.marker_before ? ' (after “' + fu.marker_before + '”)' : ''));
  }
  return GS.el('div', { class: 'leak-detail' }, GS.el('p', { class: 'hint' }, bits.join('; ')), stackList(l));
}

function leakTable(parent, leaks) {
  var state = { key: 'bytes', dir: -1 };
  var table = GS.el('table', { class: 'grid leaks-table' });
  var thead = GS.el('thead');
  var tbody = GS.el('tbody');
  table.appendChild(thead);
  table.appendChild(tbody);
  var open = new Set();
  var head = GS.el('tr', null, GS.el('th', { class: 'toggle-col' }, ''), LEAK_COLS.map(function (c) {
    return GS.el('th', { class: 'sortable' + (c.num ? ' num' : ''), 'data-key': c.key, tabindex: 0,
      on: { click: function () { sortBy(c.key); }, keydown: function (e) { if (e.key === 'Enter') sortBy(c.key); } } }, c.label);
  }));
  thead.appendChild(head);
  function sortBy(key) {
    state.dir = state.key === key ? -state.dir : (key === 'bytes' || key === 'blocks' ? -1 : 1);
    state.key = key;
    draw();
  }
  function draw() {
    var col = LEAK_COLS.filter(function (c) { return c.key === state.key; })[0];
    var rows = leaks.map(function (l, i) { return { l: l, i: i }; });
    rows.sort(function (a, b) {
      var x = col.get(a.l), y = col.get(b.l);
      return (x < y ? -1 : x > y ? 1 : 0) * state.dir || a.i - b.i;
    });
    head.querySelectorAll('th.sortable').forEach(function (th) {
      th.setAttribute('aria-sort', th.dataset.key === state.key ? (state.dir > 0 ? 'ascending' : 'descending') : 'none');
    });
    GS.clear(tbody);
    rows.forEach(function (r) {
      var l = r.l, isOpen = open.has(r.i);
      var btn = GS.el('button', { type: 'button', class: 'expand', 'aria-expanded': isOpen ? 'true' : 'false', title: 'show the stack' }, isOpen ? '▾' : '▸');
      var tr = GS.el('tr', { class: 'leak-row ' + l.class + (l.suppressed ? ' suppressed' : ''), 'data-index': r.i },
        GS.el('td', { class: 'toggle-col' }, btn),
        LEAK_COLS.map(function (c) {
          // a number's exact value stays on the cell (the text is formatted: 5.6 MiB)
          return GS.el('td', { class: c.num ? 'num' : null, 'data-key': c.key, 'data-value': c.num ? String(c.get(l)) : null,
            title: c.key === 'bytes' ? GS.fmtCount(l.bytes) + ' bytes' : null },
            GS.el('span', { class: 'cell' }, c.text(l)), c.extra ? c.extra(l) : null);
        }));
      btn.addEventListener('click', function () {
        if (open.has(r.i)) open.delete(r.i); else open.add(r.i);
        draw();
      });
      tbody.appendChild(tr);
      if (isOpen) tbody.appendChild(GS.el('tr', { class: 'leak-stack', 'data-index': r.i }, GS.el('td', { colspan: LEAK_COLS.length + 1 }, leakDetail(l))));
    });
  }
  draw();
  parent.appendChild(GS.el('div', { class: 'scroll tall' }, table));
}

// The flame graph's tree: root = every shown group, then frames outermost
// first; a node's value is the bytes of every group whose stack passes it.
function flameTree(leaks) {
  var root = { name: 'all shown leaks', value: 0, children: [], kids: new Map() };
  leaks.forEach(function (l) {
    root.value += l.bytes;
    var node = root;
    var frames = (l.stack || []).slice().reverse();
    if (!frames.length) frames = [{ function: 'stack ' + l.stack_id }];
    frames.forEach(function (f) {
      var name = GS.frameText(f);
      var next = node.kids.get(name);
      if (!next) {
        next = { name: name, value: 0, children: [], kids: new Map() };
        node.kids.set(name, next);
        node.children.push(next);
      }
      next.value += l.bytes;
      node = next;
    });
  });
  (function strip(n) { delete n.kids; n.children.forEach(strip); })(root);
  return root;
}

// At most about max frames are drawn (each is an SVG group with a label),
// none narrower than two pixels: children below the value that keeps max of
// them, or below two pixels' worth, are merged, per parent, into one
// "(N smaller stacks)" frame holding their bytes.
var FLAME_NODES = 400;
function prune(root, max, width) {
  var values = [];
  (function walk(n) { values.push(n.value); n.children.forEach(walk); })(root);
  values.sort(function (a, b) { return b - a; });
  var min = Math.max(values.length > max ? values[max - 1] : 0, root.value * 2 / width);
  (function cut(n) {
    var keep = [], rest = 0, nrest = 0;
    n.children.forEach(function (c) {
      if (c.value >= min && c.value > 0) keep.push(c);
      else { rest += c.value; nrest++; }
    });
    keep.forEach(cut);
    if (nrest) keep.push({ name: '(' + nrest + ' smaller ' + (nrest === 1 ? 'stack' : 'stacks') + ')', value: rest, children: [] });
    n.children = keep;
  })(root);
  return root;
}

function flame(parent, leaks) {
  var box = GS.el('div', { class: 'flame', 'data-chart': 'flame' });
  var details = GS.el('div', { class: 'hint flame-details' }, 'Click a frame to zoom into it; click the bottom bar to zoom out.');
  parent.appendChild(GS.el('h3', null, 'Leaked bytes by stack'));
  parent.appendChild(box);
  parent.appendChild(details);
  if (!leaks.length) {
    box.appendChild(GS.note('No leak group is shown.'));
    return;
  }
  var width = Math.max(400, (parent.clientWidth || 1000) - 10);
  var data = prune(flameTree(leaks), FLAME_NODES, width);
  var chart = flamegraph.default()
    .width(width)
    .cellHeight(18)
    .transitionDuration(0)
    .minFrameSize(1)
    .sort(true)
    .title('')
    .setColorHue('warm')
    .setLabelHandler(function (d) {
      return d.data.name + ': ' + GS.fmtBytes(d.value) + ' (' + GS.fmtPct(d.value / data.value) + ')';
    })
    .setDetailsElement(details);
  d3.select(box).datum(data).call(chart);
}

// A site as a row of the classes in `shown`: their bytes and blocks, the
// worst of them as its class; null when it has none of them.
function siteRow(site, shown) {
  var row = { bytes: 0, blocks: 0, class: null };
  GS.classes.forEach(function (c) {
    if (!shown.has(c) || !site.classes[c].blocks) return;
    row.bytes += site.classes[c].bytes;
    row.blocks += site.classes[c].blocks;
    if (!row.class) row.class = c;
  });
  if (!row.class) return null;
  ['memory', 'allocator', 'largest_block', 'inherited', 'suppressed', 'stack', 'stack_id', 'classes', 'noise', 'first_unreachable'].forEach(function (k) {
    row[k] = site[k];
  });
  return row;
}

GS.renderLeaks = function (body, p) {
  var bySite = !!p.sites;
  var all = bySite ? p.sites : (p.leaks || []);
  var omitted = (p.leaks_omitted || []).filter(function (o) { return o.groups; });
  // possible leaks are mostly the interpreter's (stale pointer-like
  // numbers): one click away, not in the way
  var shown = new Set(['definite', 'indirect']);
  var counts = {};
  all.forEach(function (l) {
    if (!bySite) counts[l.class] = (counts[l.class] || 0) + 1;
    else GS.classes.forEach(function (c) { if (l.classes[c].blocks) counts[c] = (counts[c] || 0) + 1; });
  });
  var filters = GS.el('div', { class: 'toolbar filters' }, 'show: ');
  var tableBox = GS.el('div'), flameBox = GS.el('div');
  GS.classes.forEach(function (c) {
    var cb = GS.el('input', { type: 'checkbox', 'data-class': c, checked: shown.has(c) });
    cb.addEventListener('change', function () {
      if (cb.checked) shown.add(c); else shown.delete(c);
      redraw();
    });
    filters.appendChild(GS.el('label', null, cb, ' ' + c + ' (' + (counts[c] || 0) + ')'));
  });
  body.appendChild(filters);
  var folded = bySite && p.sites_folded && p.sites_folded.sites ? p.sites_folded : null;
  if (folded) {
    var fb = GS.classes.reduce(function (a, c) { return a + (folded.classes[c] ? folded.classes[c].bytes : 0); }, 0);
    body.appendChild(GS.note('Left out beyond --max-groups: ' + GS.fmtCount(folded.sites) +
      ' more sites with reachable or not-freed blocks only (' + GS.fmtBytes(fb) + ').'));
  }
  if (omitted.length && !bySite) {
    body.appendChild(GS.note('Left out beyond --max-groups: ' + omitted.map(function (o) {
      return o.groups + ' ' + o.class + ' groups (' + GS.fmtBytes(o.bytes) + ')';
    }).join(', ') + '.'));
  }
  body.appendChild(tableBox);
  body.appendChild(flameBox);
  function redraw() {
    GS.clear(tableBox);
    GS.clear(flameBox);
    var leaks = bySite ? all.map(function (s) { return siteRow(s, shown); }).filter(function (r) { return r; })
      : all.filter(function (l) { return shown.has(l.class); });
    if (!leaks.length) {
      tableBox.appendChild(GS.note(all.length ? 'No site of the classes ticked above.' : 'No leaks: every block was freed, or the trace holds no scan and no live block at exit.'));
    } else {
      leakTable(tableBox, leaks);
    }
    flame(flameBox, leaks);
  }
  redraw();
};
