// The Memory over time section: live bytes per memory kind and RSS (the
// report's timeline: at most 2048 buckets, each the largest value seen in
// it), with user markers, steps and leak scans on the time axis, zoom and pan.
'use strict';

// x of bucket i: its start, in seconds.
GS.bucketXs = function (tl) {
  var xs = new Array(tl.buckets);
  for (var i = 0; i < tl.buckets; i++) xs[i] = i * tl.bucket_ns / 1e9;
  return xs;
};

function clip(s, n) {
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

// Markers and scans drawn over a time chart (canvas text: inert whatever it says).
GS.timeOverlay = function (tl) {
  var users = (tl.markers || []).filter(function (m) { return m.kind === 'user'; });
  var steps = (tl.markers || []).filter(function (m) { return m.kind === 'step'; });
  var scans = tl.scans || [];
  return function (u) {
    var ctx = GS.plotCtx(u), b = u.bbox, dpr = devicePixelRatio || 1;
    ctx.textAlign = 'left';
    ctx.textBaseline = 'alphabetic';
    scans.forEach(function (s) {
      var x0 = u.valToPos(s.t_ns / 1e9, 'x', true), x1 = u.valToPos((s.t_ns + s.duration_ns) / 1e9, 'x', true);
      ctx.fillStyle = 'rgba(242,142,43,0.25)';
      ctx.fillRect(x0, b.top, Math.max(2 * dpr, x1 - x0), b.height);
      ctx.fillStyle = '#b35c00';
      ctx.font = (10 * dpr) + 'px sans-serif';
      ctx.fillText('scan ' + s.id, x0 + 2 * dpr, b.top + b.height - 4 * dpr);
    });
    ctx.strokeStyle = 'rgba(0,0,0,0.35)';
    ctx.lineWidth = dpr;
    var stepEvery = Math.max(1, Math.ceil(steps.length / 200));
    steps.forEach(function (m, i) {
      if (i % stepEvery) return;
      var x = u.valToPos(m.t_ns / 1e9, 'x', true);
      ctx.beginPath();
      ctx.moveTo(x, b.top + b.height);
      ctx.lineTo(x, b.top + b.height - 6 * dpr);
      ctx.stroke();
    });
    ctx.setLineDash([4 * dpr, 3 * dpr]);
    ctx.strokeStyle = '#7b3294';
    ctx.fillStyle = '#7b3294';
    ctx.font = (11 * dpr) + 'px sans-serif';
    var lastLabelX = -1e9;
    users.forEach(function (m) {
      var x = u.valToPos(m.t_ns / 1e9, 'x', true);
      ctx.beginPath();
      ctx.moveTo(x, b.top);
      ctx.lineTo(x, b.top + b.height);
      ctx.stroke();
      if (x - lastLabelX > 80 * dpr) {
        ctx.fillText(clip(m.label || '', 40), x + 3 * dpr, b.top + 12 * dpr);
        lastLabelX = x;
      }
    });
    ctx.restore();
  };
};

GS.renderMemory = function (body, p) {
  var tl = p.timeline;
  if (!tl || !tl.buckets) {
    body.appendChild(GS.note(tl ? 'The trace has no events in time.' : 'The report was made with --no-timeline.'));
    return;
  }
  var xs = GS.bucketXs(tl), lb = tl.live_bytes;
  var any = function (a) { return a && a.some(function (v) { return v; }); };
  var series = GS.kinds.map(function (k) {
    return { label: k, color: GS.kindColors[k], show: k === 'host' || any(lb[k]), values: lb[k] };
  });
  // RSS solid in a colour of its own, wider: the dashed lines are markers
  series.push({ label: 'RSS', color: GS.kindColors.rss, width: 2, show: any(tl.rss), values: tl.rss });
  GS.plot(body, {
    name: 'memory',
    data: [xs].concat(series.map(function (s) { return s.values; })),
    series: series,
    height: 320,
    zoom: true,
    yTitle: 'live bytes, RSS',
    draw: GS.timeOverlay(tl),
    hint: 'Live bytes per memory kind and RSS (solid, cyan); dashed purple lines are user markers, ticks at the bottom steps, orange bands leak scans. ' +
      'Drag to zoom, wheel to zoom, shift+drag to pan, double-click to reset. Click a legend entry to hide or show it.',
  });
  var bar = GS.el('div', { class: 'toolbar' },
    GS.el('button', { type: 'button', on: { click: function () {
      GS.charts.forEach(function (c) {
        if (c.name === 'memory') c.u.setScale('x', { min: xs[0], max: xs[xs.length - 1] });
      });
    } } }, 'Reset zoom'),
    ' bucket ' + GS.fmtNs(tl.bucket_ns) + ', ' + tl.buckets + ' buckets' +
    (tl.step_stride > 1 ? '; every ' + tl.step_stride + 'th step marker kept' : '') +
    (tl.marker_stride > 1 ? '; every ' + tl.marker_stride + 'th user marker kept' : ''));
  body.appendChild(bar);

  var users = (tl.markers || []).filter(function (m) { return m.kind === 'user'; });
  var steps = (tl.markers || []).filter(function (m) { return m.kind === 'step'; });
  var cols = GS.el('div', { class: 'cols' });
  var mk = GS.el('div', null, GS.el('h3', null, 'User markers (' + users.length + (steps.length ? ', and ' + steps.length + ' steps' : '') + ')'));
  if (users.length) {
    var shown = users.slice(0, 500);
    mk.appendChild(GS.el('div', { class: 'scroll' }, GS.el('table', { class: 'grid markers' },
      GS.el('thead', null, GS.el('tr', null, GS.el('th', null, 'time'), GS.el('th', null, '#'), GS.el('th', null, 'label'))),
      GS.el('tbody', null, shown.map(function (m) {
        return GS.el('tr', null, GS.el('td', { class: 'num' }, GS.fmtNs(m.t_ns)), GS.el('td', { class: 'num' }, String(m.ordinal)),
          GS.el('td', { class: 'marker-label' }, m.label || ''));
      })))));
    if (users.length > shown.length) mk.appendChild(GS.note('First 500 shown.'));
  } else {
    mk.appendChild(GS.note('None: gcspy_mark() was not called.'));
  }
  var sc = GS.el('div', null, GS.el('h3', null, 'Leak scans (' + (tl.scans || []).length + ')'));
  if ((tl.scans || []).length) {
    sc.appendChild(GS.el('div', { class: 'scroll' }, GS.el('table', { class: 'grid scans' },
      GS.el('thead', null, GS.el('tr', null, ['scan', 'time', 'trigger', 'stopped for', 'unreachable', 'new'].map(function (h) { return GS.el('th', null, h); }))),
      GS.el('tbody', null, tl.scans.slice(0, 500).map(function (s) {
        return GS.el('tr', null, GS.el('td', { class: 'num' }, String(s.id)), GS.el('td', { class: 'num' }, GS.fmtNs(s.t_ns)),
          GS.el('td', null, s.trigger), GS.el('td', { class: 'num' }, GS.fmtNs(s.duration_ns)),
          GS.el('td', { class: 'num' }, GS.fmtBytes(s.unreachable_bytes)), GS.el('td', { class: 'num' }, GS.fmtBytes(s.new_unreachable_bytes)));
      })))));
  } else {
    sc.appendChild(GS.note('No leak scan ran.'));
  }
  cols.appendChild(mk);
  cols.appendChild(sc);
  body.appendChild(cols);
};
