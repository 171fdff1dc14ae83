// The Pauses section: every pause on a timeline (its length at its start
// time, one colour per kind; the longest 4000 when there are more), a
// histogram of all pause lengths (powers of two), and the minimum mutator
// utilisation curve (the report's MMU).
'use strict';

var PAUSE_COLORS = { scan: '#f28e2b', 'cuda-sync': '#e15759', 'python-gc': '#4e79a7' };

GS.renderPauses = function (body, p, x) {
  var pz = p.pauses;
  var pc = pz.percentiles_ns;
  body.appendChild(GS.el('p', null, GS.fmtCount(pz.count) + ' pauses (from ' + pz.sources + '), ' + GS.fmtNs(pz.paused_ns) +
    ' paused of ' + GS.fmtNs(pz.wall_ns) + ' (' + GS.fmtPct(pz.share, 2) + ')' +
    (pc ? '; p50 ' + GS.fmtNs(pc.p50) + ', p90 ' + GS.fmtNs(pc.p90) + ', p99 ' + GS.fmtNs(pc.p99) + ', max ' + GS.fmtNs(pc.max) : '') + '.'));
  var kinds = Object.keys(pz.by_kind || {}).filter(function (k) { return pz.by_kind[k].count; });
  if (kinds.length) {
    body.appendChild(GS.el('table', { class: 'grid' },
      GS.el('thead', null, GS.el('tr', null, ['kind', 'count', 'total', 'longest'].map(function (h) { return GS.el('th', null, h); }))),
      GS.el('tbody', null, kinds.map(function (k) {
        var b = pz.by_kind[k];
        return GS.el('tr', null, GS.el('td', null, k), GS.el('td', { class: 'num' }, GS.fmtCount(b.count)),
          GS.el('td', { class: 'num' }, GS.fmtNs(b.total_ns)), GS.el('td', { class: 'num' }, GS.fmtNs(b.max_ns)));
      }))));
  }
  var xp = x && !x.error && x.pauses;
  if (xp && xp.shown) {
    var names = xp.kind_names;
    var used = names.filter(function (n, i) { return xp.kind.indexOf(i) >= 0; });
    var xs = xp.t_ns.map(function (t) { return t / 1e9; });
    var series = used.map(function (n) {
      var ki = names.indexOf(n);
      return { label: n, color: PAUSE_COLORS[n] || '#777', points: true,
        values: xp.duration_ns.map(function (d, i) { return xp.kind[i] === ki ? d / 1e6 : null; }) };
    });
    // uPlot wants increasing x: pauses of the same start are nudged apart by nothing visible
    for (var i = 1; i < xs.length; i++) if (xs[i] <= xs[i - 1]) xs[i] = xs[i - 1] + 1e-12;
    GS.plot(body, {
      name: 'pause-timeline', title: 'Pauses over time' + (xp.shown < xp.count ? ' (the longest ' + xp.shown + ' of ' + xp.count + ')' : ''),
      data: [xs].concat(series.map(function (s) { return s.values; })), series: series, height: 220, zoom: true,
      xRange: [0, (p.duration_ns || 1) / 1e9],
      yFmt: function (v) { return +v.toFixed(3) + ' ms'; }, yTitle: 'pause length',
    });
    var cols = GS.el('div', { class: 'cols' }), a = GS.el('div'), b = GS.el('div');
    cols.appendChild(a);
    cols.appendChild(b);
    body.appendChild(cols);
    var lo = xp.hist_lo_us, hx = lo.map(function (_, i) { return i; });
    var label = function (i) {
      i = Math.round(i);
      if (i < 0 || i >= lo.length) return '';
      return i ? '≥' + GS.fmtSec(lo[i] / 1e6) : '<2 µs';
    };
    GS.plot(a, {
      name: 'pause-histogram', title: 'Pause lengths (all ' + GS.fmtCount(xp.count) + ')',
      data: [hx, xp.hist_count], series: [{ label: 'pauses', color: '#4e79a7', bars: true }], height: 220,
      xFmt: label, xTick: label, xLabel: 'length', xRange: [-0.5, Math.max(1, lo.length) - 0.5], xCats: true,
      xTitle: 'pause length (bins of powers of two)', yTitle: 'pauses',
      yFmt: function (v) { return GS.fmtCount(v); }, yLegend: function (v) { return GS.fmtCount(v); },
    });
    var mmu = (pz.mmu || []).filter(function (m) { return m.utilization !== null; });
    if (mmu.length) {
      GS.plot(b, {
        name: 'mmu', title: 'Minimum mutator utilisation',
        data: [mmu.map(function (m) { return m.window_ns / 1e9; }), mmu.map(function (m) { return m.utilization; })],
        series: [{ label: 'MMU', color: '#59a14f', points: false }], height: 220, xLog: true, xLabel: 'window',
        yRange: [0, 1], yFmt: function (v) { return GS.fmtPct(v, 0); }, xTitle: 'window length', yTitle: 'utilisation',
        hint: 'The smallest share of any window of that length during which the program ran (pauses merged).',
      });
    } else {
      b.appendChild(GS.note('The run is shorter than the smallest MMU window (1 ms).'));
    }
  } else if (!pz.count) {
    body.appendChild(GS.note('No pauses: no leak scan stopped the program, no Python GC or synchronous CUDA call was recorded.'));
  } else {
    body.appendChild(GS.note('The pause list is not available' + (x && x.error ? ': ' + x.error : '') + '.'));
  }
};
