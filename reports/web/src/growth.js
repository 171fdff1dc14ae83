// The Growth section: memory still referenced but piling up. Each suspect
// site's live bytes per step (or over time, for traces with fewer than five
// steps), sampled by the second pass (gcspy-extra growth), over the fitted
// line of the report; and the suspects' table.
'use strict';

// Suspects drawn and in the chart's legend, the largest by peak bytes.
var LEGEND_MAX = 8;

// Each drawn suspect's fitted line over its window, dashed in its colour
// (drawn over the series, so it takes no legend entry of its own), while its
// series is shown.
function fitLines(fits) {
  return function (u) {
    var ctx = GS.plotCtx(u), dpr = devicePixelRatio || 1;
    ctx.setLineDash([4 * dpr, 4 * dpr]);
    ctx.lineWidth = dpr;
    fits.forEach(function (f) {
      if (!u.series[f.series].show) return;
      var s = f.s;
      ctx.strokeStyle = f.color;
      ctx.beginPath();
      ctx.moveTo(u.valToPos(s.x_from, 'x', true), u.valToPos(s.start_bytes, 'y', true));
      ctx.lineTo(u.valToPos(s.x_to, 'x', true), u.valToPos(s.start_bytes + s.rate * (s.x_to - s.x_from), 'y', true));
      ctx.stroke();
    });
    ctx.restore();
  };
}

GS.renderGrowth = function (body, p, x) {
  var g = p.growth, sus = g.suspects || [];
  var axisStep = g.axis === 'step';
  body.appendChild(GS.el('p', { class: 'hint' }, 'Axis: ' + (axisStep ? g.steps + ' steps' : 'time') + ', ' + g.checkpoints +
    ' checkpoints. A site is a suspect when a line fitted to its live bytes rises at least 64 KiB with R² ≥ 0.8 and its peak is near the end of its life.'));
  if (!sus.length) {
    body.appendChild(GS.note('No growth suspects.'));
    return;
  }
  var gx = x && !x.error && x.growth;
  // the chart's legend lists the largest suspects only (by peak bytes), a
  // line says how many more; the table below lists them all
  var order = sus.map(function (s, i) { return i; }).sort(function (a, b) {
    return sus[b].peak_bytes - sus[a].peak_bytes || a - b;
  });
  var rank = new Array(sus.length);
  order.forEach(function (i, r) { rank[i] = r; });
  var colour = function (i) { return rank[i] < LEGEND_MAX ? GS.color(rank[i]) : '#bbb'; };
  var series = [], data = null, fits = [];
  if (gx && gx.x.length) {
    var byId = new Map();
    gx.sites.forEach(function (s) { byId.set(s.stack_id, s.live_bytes); });
    data = [gx.x];
    order.slice(0, LEGEND_MAX).forEach(function (i) {
      var s = sus[i], ys = byId.get(s.stack_id);
      if (!ys) return;
      series.push({ label: GS.siteLabel(s.stack, s.stack_id), color: colour(i) });
      data.push(ys);
      fits.push({ series: series.length, s: s, color: colour(i) });
    });
  }
  if (series.length) {
    GS.plot(body, {
      name: 'growth', title: 'Live bytes of each suspect site ' + (axisStep ? 'per step' : 'over time'),
      data: data, series: series, height: 300, zoom: true,
      xFmt: axisStep ? function (v) { return 'step ' + Math.round(v); } : GS.fmtSec,
      xTick: axisStep ? function (v) { return String(Math.round(v)); } : null,
      xLabel: axisStep ? 'step' : 'time', yTitle: 'live bytes of the site',
      draw: fitLines(fits),
      hint: (axisStep && gx.stride > 1 ? 'Every ' + gx.stride + 'th step sampled. ' : '') + 'Dashed: the fitted line over its window.',
    });
    if (sus.length > LEGEND_MAX) {
      body.appendChild(GS.el('p', { class: 'legend-more' }, '+' + (sus.length - LEGEND_MAX) + ' more suspect' +
        (sus.length - LEGEND_MAX > 1 ? 's' : '') + ', smaller, in the table below'));
    }
  } else {
    body.appendChild(GS.note('Live bytes per step are not available' + (x && x.error ? ': ' + x.error : '') + '; the table has the fit.'));
  }
  var rows = sus.map(function (s, i) {
    return GS.el('tr', { class: s.suppressed ? 'suppressed' : null, 'data-stack': s.stack_id },
      GS.el('td', null, GS.el('span', { class: 'swatch', style: { background: colour(i) } }), ' ',
        GS.siteLabel(s.stack, s.stack_id)),
      GS.el('td', null, s.memory),
      GS.el('td', { class: 'num' }, GS.fmtBytes(Math.round(s.rate)) + (s.unit === 'bytes/step' ? '/step' : '/s')),
      GS.el('td', { class: 'num' }, s.confidence.toFixed(3)),
      GS.el('td', { class: 'num' }, (axisStep ? 'steps ' : '') + +s.x_from.toFixed(3) + '–' + +s.x_to.toFixed(3) + (axisStep ? '' : ' s') + ' (' + s.points + ' points)'),
      GS.el('td', { class: 'num' }, GS.fmtBytes(s.start_bytes) + ' → ' + GS.fmtBytes(s.peak_bytes) + ' → ' + GS.fmtBytes(s.end_bytes)),
      GS.el('td', null, s.suppressed ? 'suppressed by ' + s.suppressed : ''));
  });
  body.appendChild(GS.el('div', { class: 'scroll' }, GS.el('table', { class: 'grid growth-table' },
    GS.el('thead', null, GS.el('tr', null, ['site', 'memory', 'rate', 'R²', 'window', 'start → peak → end', ''].map(function (h) { return GS.el('th', null, h); }))),
    GS.el('tbody', null, rows))));
};
