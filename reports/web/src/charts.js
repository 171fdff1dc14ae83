// Charts of the report page: every x/y chart is a uPlot (canvas, built for
// long series), made here with the page's conventions: width from the
// container, axes formatted in bytes or seconds, zoom (drag to select, wheel)
// and pan (shift+drag) where asked, double-click to reset. Charts register in
// GS.charts so a resize can follow the window and the tests can find them.
'use strict';

GS.charts = [];

// Series of different x samplings on one x axis: the union of the xs, with
// null where a series has no value (uPlot needs one x array per chart).
GS.mergeXs = function (list) {
  var all = [];
  list.forEach(function (s) { for (var i = 0; i < s.xs.length; i++) all.push(s.xs[i]); });
  all.sort(function (a, b) { return a - b; });
  var xs = [];
  for (var i = 0; i < all.length; i++) if (!xs.length || xs[xs.length - 1] !== all[i]) xs.push(all[i]);
  var index = new Map();
  xs.forEach(function (x, i) { index.set(x, i); });
  var ys = list.map(function (s) {
    var y = new Array(xs.length).fill(null);
    for (var i = 0; i < s.xs.length; i++) y[index.get(s.xs[i])] = s.ys[i];
    return y;
  });
  return [xs].concat(ys);
};

// Byte axes tick at multiples of a power of two (64 MiB, 512 KiB...), never
// at round decimal byte values labelled in binary units (95M, 191M): the
// step is the smallest power of two giving at most n ticks over the span,
// and at least a quarter of the largest value's unit, so labels stay short
// (768K, 1.25M) and each one is exactly its value (GS.fmtBytesTick).
GS.byteStep = function (span, n) {
  var step = 1, unit = 1;
  while (unit * 1024 <= span) unit *= 1024;
  while (span / step > n || step < unit / 4) step *= 2;
  return step;
};

GS.byteSplits = function (min, max, px) {
  var step = GS.byteStep(Math.max(1, max - Math.min(0, min)), Math.max(2, Math.floor(px / 36)));
  var out = [];
  for (var v = Math.ceil(min / step) * step; v <= max * (1 + 1e-9); v += step) out.push(v);
  return out;
};

// A byte axis's top: the first tick at or above the data's maximum.
GS.byteTop = function (max, px) {
  if (!(max > 0)) return 1024;
  var step = GS.byteStep(max, Math.max(2, Math.floor(px / 36)));
  return Math.ceil(max / step) * step;
};

// Labels of a categorical x axis (one value per integer, e.g. histogram
// bins), thinned to every k-th so that no two labels overlap: k from the
// widest label, measured in the axis's font, against the width of a bin.
function thinnedSplits(fmt) {
  var ctx = null;
  return function (u, ai, min, max) {
    var lo = Math.ceil(min), hi = Math.floor(max);
    if (hi < lo) return [];
    ctx = ctx || document.createElement('canvas').getContext('2d');
    ctx.font = u.axes[ai].font[0];
    var wide = 0;
    for (var i = lo; i <= hi; i++) wide = Math.max(wide, ctx.measureText(fmt(i)).width);
    var perBin = (u.bbox.width / (devicePixelRatio || 1)) / Math.max(1, max - min);
    var k = Math.max(1, Math.ceil((wide + 10) / Math.max(1e-9, perBin)));
    var out = [];
    for (var j = lo; j <= hi; j += k) out.push(j);
    return out;
  };
}

// The chart's canvas context, saved and clipped to the plot area, for
// drawing over the series (restore it after).
GS.plotCtx = function (u) {
  var ctx = u.ctx, b = u.bbox;
  ctx.save();
  ctx.beginPath();
  ctx.rect(b.left, b.top, b.width, b.height);
  ctx.clip();
  return ctx;
};

function zoomPlugin() {
  return {
    hooks: {
      ready: function (u) {
        var over = u.over;
        var full = function () {
          var xs = u.data[0];
          return [xs[0], xs[xs.length - 1]];
        };
        over.addEventListener('wheel', function (e) {
          e.preventDefault();
          var r = over.getBoundingClientRect();
          var xv = u.posToVal(e.clientX - r.left, 'x');
          var min = u.scales.x.min, max = u.scales.x.max, f = e.deltaY < 0 ? 0.75 : 1 / 0.75;
          var lim = full(), nmin = xv - (xv - min) * f, nmax = xv + (max - xv) * f;
          if (nmax - nmin >= lim[1] - lim[0]) { nmin = lim[0]; nmax = lim[1]; }
          u.setScale('x', { min: Math.max(lim[0], nmin), max: Math.min(lim[1], nmax) });
        }, { passive: false });
        // shift+drag pans; caught before uPlot's own mousedown starts a selection
        over.addEventListener('mousedown', function (e) {
          if (!e.shiftKey || e.button !== 0) return;
          e.preventDefault();
          e.stopImmediatePropagation();
          var x0 = e.clientX, min0 = u.scales.x.min, max0 = u.scales.x.max, lim = full();
          var perPx = (max0 - min0) / Math.max(1, over.clientWidth);
          var move = function (ev) {
            var d = -(ev.clientX - x0) * perPx;
            d = Math.max(lim[0] - min0, Math.min(lim[1] - max0, d));
            u.setScale('x', { min: min0 + d, max: max0 + d });
          };
          var up = function () {
            document.removeEventListener('mousemove', move);
            document.removeEventListener('mouseup', up);
          };
          document.addEventListener('mousemove', move);
          document.addEventListener('mouseup', up);
        }, true);
      },
    },
  };
}

// GS.plot(parent, spec) draws one chart and returns its uPlot.
//   spec.name     what the tests and screenshots call it
//   spec.title    heading above it
//   spec.data     [xs, ys...]
//   spec.series   [{label, color, show, points, bars, dash, fill, scale, fmt}]
//   spec.xFmt     tick/legend text of x (default seconds); spec.xLog: log x
//   spec.xCats    x is categorical (integers): labels thinned so none overlap
//   spec.yFmt     of y (default bytes, ticks at binary steps); spec.y2Fmt
//                 for series with scale 'y2'
//   spec.xTitle, spec.yTitle, spec.y2Title   axis titles (every chart has them)
//   spec.yRange   [min, max] fixed
//   spec.zoom     wheel zoom and shift+drag pan (drag-select zoom is always on)
//   spec.draw     extra drawing after the series (markers, bands)
GS.plot = function (parent, spec) {
  var box = GS.el('div', { class: 'chart', 'data-chart': spec.name });
  if (spec.title) box.appendChild(GS.el('h4', null, spec.title));
  var target = GS.el('div', { class: 'plot' });
  box.appendChild(target);
  if (spec.hint) box.appendChild(GS.el('p', { class: 'hint' }, spec.hint));
  parent.appendChild(box);
  var xFmt = spec.xFmt || GS.fmtSec;
  var yFmt = spec.yFmt || GS.fmtBytesShort;
  var yLegend = spec.yLegend || (spec.yFmt ? spec.yFmt : GS.fmtBytes);
  var series = [{ label: spec.xLabel || 'time', value: function (u, v) { return v === null ? '' : xFmt(v); } }];
  spec.series.forEach(function (s) {
    var f = s.scale === 'y2' ? (spec.y2Fmt || yFmt) : yLegend;
    var o = {
      label: s.label,
      stroke: s.color,
      width: s.width || 1.5,
      show: s.show !== false,
      spanGaps: s.spanGaps !== false,
      scale: s.scale || 'y',
      value: function (u, v) { return v === null || v === undefined ? '–' : f(v); },
      points: { show: !!s.points, size: s.pointSize || 5, fill: s.color, stroke: s.color },
    };
    if (s.dash) o.dash = s.dash;
    if (s.fill) o.fill = s.fill;
    if (s.points) o.paths = function () { return null; };
    if (s.bars) {
      o.paths = uPlot.paths.bars({ size: [0.85, Infinity] });
      o.fill = s.color;
      o.points = { show: false };
    }
    if (s.stepped) o.paths = uPlot.paths.stepped({ align: 1 });
    series.push(o);
  });
  var height = spec.height || 260;
  var yBytes = !spec.yFmt, y2Bytes = !spec.y2Fmt && yBytes;
  var plotPx = function (u) { return u.bbox ? u.bbox.height / (devicePixelRatio || 1) : height - 60; };
  var scales = { x: { time: false } };
  if (spec.xLog) scales.x.distr = 3;
  if (spec.xRange) scales.x.range = function () { return spec.xRange; };
  if (spec.yRange) scales.y = { range: function () { return spec.yRange; } };
  else if (yBytes) scales.y = { range: function (u, min, max) { return [Math.min(0, min), GS.byteTop(max, plotPx(u))]; } };
  else scales.y = { range: function (u, min, max) { return [Math.min(0, min), max > 0 ? max * 1.05 : 1]; } };
  var xTickFmt = spec.xTick || xFmt;
  var axes = [
    { values: function (u, vals) { return vals.map(function (v) { return xTickFmt(v); }); }, grid: { stroke: '#eee' },
      space: 80, label: spec.xTitle || (spec.xLabel === 'time' || !spec.xLabel ? 'time since the start' : spec.xLabel),
      labelSize: 22 },
    { values: function (u, vals) { return vals.map(yBytes ? GS.fmtBytesTick : yFmt); }, size: 64, grid: { stroke: '#eee' },
      label: spec.yTitle || (yBytes ? 'bytes' : ''), labelSize: 22 },
  ];
  if (spec.xCats) axes[0].splits = thinnedSplits(xTickFmt);
  if (yBytes) axes[1].splits = function (u, ai, min, max) { return GS.byteSplits(min, max, plotPx(u)); };
  if (spec.series.some(function (s) { return s.scale === 'y2'; })) {
    scales.y2 = y2Bytes
      ? { range: function (u, min, max) { return [0, GS.byteTop(max, plotPx(u))]; } }
      : { range: function (u, min, max) { return [0, max > 0 ? max * 1.05 : 1]; } };
    axes.push({ scale: 'y2', side: 1, size: 64, grid: { show: false }, label: spec.y2Title || (y2Bytes ? 'bytes' : ''), labelSize: 22,
      splits: y2Bytes ? function (u, ai, min, max) { return GS.byteSplits(min, max, plotPx(u)); } : undefined,
      values: function (u, vals) { return vals.map(y2Bytes ? GS.fmtBytesTick : (spec.y2Fmt || yFmt)); } });
  }
  var width = Math.max(320, (parent.clientWidth || 900) - 8);
  var opts = {
    width: width,
    height: height,
    scales: scales,
    axes: axes,
    series: series,
    cursor: { drag: { x: true, y: false, setScale: true } },
    legend: { live: true },
    hooks: { draw: spec.draw ? [spec.draw] : [] },
    plugins: spec.zoom ? [zoomPlugin()] : [],
  };
  var u = new uPlot(opts, spec.data, target);
  GS.charts.push({ name: spec.name, u: u, box: box, parent: parent, height: opts.height });
  return u;
};

GS.destroyCharts = function () {
  GS.charts.forEach(function (c) { c.u.destroy(); });
  GS.charts = [];
};

window.addEventListener('resize', function () {
  GS.charts.forEach(function (c) {
    var w = Math.max(320, (c.parent.clientWidth || 900) - 8);
    if (Math.abs(w - c.u.width) > 4) c.u.setSize({ width: w, height: c.height });
  });
});
