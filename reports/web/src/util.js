// Shared helpers of the report page: the GS namespace every other file adds
// to, DOM construction, number formatting, colours, base64.
//
// What must stay true: text from the trace (function names, file paths,
// command lines, marker labels) reaches the page only as text: through
// GS.el's string children (text nodes), textContent, SVG text via d3's
// .text(), or canvas fillText. Nothing here or elsewhere assigns innerHTML,
// outerHTML or insertAdjacentHTML, or passes trace text to d3's .html().
'use strict';

window.GS = { startMs: performance.now() };

// el('div', {class: 'x', title: t}, 'text', child, ...): an element with
// attributes (set as attributes, so never as markup) and children (strings
// become text nodes; null and undefined are skipped; arrays are flattened).
GS.el = function (tag, attrs) {
  var e = tag.indexOf('svg:') === 0
    ? document.createElementNS('http://www.w3.org/2000/svg', tag.slice(4))
    : document.createElement(tag);
  if (attrs) {
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) return;
      if (k === 'on') {
        Object.keys(v).forEach(function (ev) { e.addEventListener(ev, v[ev]); });
      } else if (k === 'style' && typeof v === 'object') {
        Object.keys(v).forEach(function (s) { e.style[s] = v[s]; });
      } else {
        e.setAttribute(k, v === true ? '' : String(v));
      }
    });
  }
  GS.append(e, Array.prototype.slice.call(arguments, 2));
  return e;
};

GS.append = function (e, kids) {
  kids.forEach(function (c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) GS.append(e, c);
    else if (c instanceof Node) e.appendChild(c);
    else e.appendChild(document.createTextNode(String(c)));
  });
  return e;
};

GS.clear = function (e) {
  while (e.firstChild) e.removeChild(e.firstChild);
  return e;
};

// A note in a section: why something is not shown.
GS.note = function (text) {
  return GS.el('p', { class: 'note' }, text);
};

GS.fmtBytes = function (n) {
  if (n === null || n === undefined) return '–';
  var units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  if (Math.abs(n) < 10240) return n + (n === 1 ? ' byte' : ' bytes');
  var v = n / 1024, k = 0;
  while (Math.abs(v) >= 1024 && k < units.length - 1) { v /= 1024; k++; }
  return (Math.abs(v) < 100 ? v.toFixed(1) : v.toFixed(0)) + ' ' + units[k];
};

// Axis labels: short, for ticks.
GS.fmtBytesShort = function (n) {
  if (n === null || n === undefined) return '';
  var a = Math.abs(n);
  var units = [['P', 2 ** 50], ['T', 2 ** 40], ['G', 2 ** 30], ['M', 2 ** 20], ['K', 1024]];
  for (var i = 0; i < units.length; i++) {
    if (a >= units[i][1]) {
      var v = n / units[i][1];
      return (Math.abs(v) < 10 ? +v.toFixed(1) : Math.round(v)) + units[i][0];
    }
  }
  return String(Math.round(n));
};

// A byte axis's tick: the value in the largest binary unit it reaches,
// exactly (the ticks are multiples of a power of two: GS.byteSplits).
GS.fmtBytesTick = function (n) {
  if (n === null || n === undefined) return '';
  var units = [['P', 2 ** 50], ['T', 2 ** 40], ['G', 2 ** 30], ['M', 2 ** 20], ['K', 1024]];
  for (var i = 0; i < units.length; i++) {
    if (Math.abs(n) >= units[i][1]) return +(n / units[i][1]).toFixed(4) + units[i][0];
  }
  return String(n);
};

GS.fmtNs = function (ns) {
  if (ns === null || ns === undefined) return '–';
  if (ns >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
  if (ns >= 1e6) return (ns / 1e6).toFixed(1) + ' ms';
  if (ns >= 1e3) return (ns / 1e3).toFixed(1) + ' µs';
  return ns + ' ns';
};

GS.fmtSec = function (s) {
  if (s === null || s === undefined) return '';
  if (s === 0) return '0';
  if (Math.abs(s) >= 100) return s.toFixed(0) + ' s';
  if (Math.abs(s) >= 1) return +s.toFixed(2) + ' s';
  if (Math.abs(s) >= 1e-3) return +(s * 1e3).toFixed(2) + ' ms';
  return +(s * 1e6).toFixed(1) + ' µs';
};

GS.fmtPct = function (f, digits) {
  if (f === null || f === undefined || isNaN(f)) return '–';
  return (100 * f).toFixed(digits === undefined ? 1 : digits) + '%';
};

GS.fmtCount = function (n) {
  if (n === null || n === undefined) return '–';
  return Number(n).toLocaleString('en-US');
};

// "function (file:line)", or module+offset, or the address: one frame, as text.
GS.frameText = function (f) {
  if (!f) return '(no stack)';
  var name = f.function || (f.module ? GS.basename(f.module) + '+' + (f.offset || '?') : (f.address || '?'));
  var where = GS.frameWhere(f);
  return where ? name + ' (' + where + ')' : name;
};

// Where Python code asked for it: the first Python frame of a stack whose
// top frame is native (an allocator inside the interpreter or a library), as
// "in forward (model.py:42)"; '' otherwise.
GS.pythonCaller = function (stack) {
  if (!stack || !stack.length || stack[0].python) return '';
  for (var i = 1; i < stack.length; i++) {
    if (stack[i].python) return 'in ' + GS.frameText(stack[i]);
  }
  return '';
};

// A site's name for legends: its top frame, and the Python frame under it.
GS.siteLabel = function (stack, id) {
  if (!stack || !stack.length) return 'stack ' + id;
  var py = GS.pythonCaller(stack);
  return GS.frameText(stack[0]) + (py ? ' ' + py : '');
};

GS.frameWhere = function (f) {
  if (!f || !f.file) return '';
  return GS.basename(f.file) + (f.line ? ':' + f.line : '');
};

GS.basename = function (p) {
  if (!p) return '';
  var i = p.lastIndexOf('/');
  return i >= 0 ? p.slice(i + 1) : p;
};

// base64 to bytes (the address maps' cells).
GS.b64 = function (s) {
  var bin = atob(s || '');
  var v = new Uint8Array(bin.length);
  for (var i = 0; i < bin.length; i++) v[i] = bin.charCodeAt(i);
  return v;
};

// Categorical colours (Tableau 20 without the greys), then hues around the wheel.
GS.palette = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1',
  '#ff9da7', '#9c755f', '#a0cbe8', '#ffbe7d', '#ff9d9a', '#8cd17d', '#b6992d', '#86bcb6',
  '#d37295', '#fabfd2', '#d4a6c8', '#499894', '#79706e', '#f1ce63', '#d7b5a6', '#bab0ac', '#7b848f'];
GS.color = function (i) {
  if (i < GS.palette.length) return GS.palette[i];
  return 'hsl(' + ((i * 137.5) % 360) + ',55%,55%)';
};

GS.kindColors = { host: '#4e79a7', pinned: '#f28e2b', managed: '#59a14f', device: '#e15759',
  total: '#555555', rss: '#17becf' };

// A DEVICE_SAMPLE's allocator: the memory kind of its blocks (trace_format.h).
GS.allocName = function (k) {
  return { 3: '(device memory)', 4: '(VMM)', 2: '(managed)', 1: '(pinned)' }[k] || '(allocator ' + k + ')';
};

GS.classes = ['definite', 'indirect', 'possible', 'reachable', 'not-freed'];
GS.kinds = ['host', 'pinned', 'managed', 'device'];

// A process's name in lists: "pid 123: python3 train.py".
GS.procName = function (p, i) {
  var who = p.pid !== null && p.pid !== undefined ? 'pid ' + p.pid : 'process ' + (i + 1);
  if (p.rank !== null && p.rank !== undefined) who += ' (rank ' + p.rank + ')';
  return who + ': ' + (p.command || p.trace);
};

// The largest finite value of arrays of numbers (nulls skipped).
GS.maxOf = function (arrays) {
  var m = 0;
  arrays.forEach(function (a) {
    if (!a) return;
    for (var i = 0; i < a.length; i++) if (a[i] !== null && a[i] > m) m = a[i];
  });
  return m;
};
