// The Growth section: memory still referenced but piling up. Each suspect
// site's live bytes per step (or over time, for traces with fewer than five
// steps), sampled by the second pass (gcspy-extra growth), over the fitted
// line of the report; and the suspects' table.
'use strict';

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
  var series = [], data = null;
  if (gx && gx.x.length) {
    var byId = new Map();
    gx.sites.forEach(function (s) { byId.set(s.stack_id, s.live_bytes); });
    data = [gx.x];
    sus.forEach(function (s, i) {
      var ys = byId.get(s.stack_id);
      if (!ys) return;
      var name = GS.siteLabel(s.stack, s.stack_id);
      series.push({ label: name, color: GS.color(i), show: i < 8 });
      data.push(ys);
      // the report's fit over its window, dashed
      var fit = gx.x.map(function (xv) {
        if (xv < s.x_from || xv > s.x_to) return null;
        return s.start_bytes + s.rate * (xv - s.x_from);
      });
      series.push({ label: 'fit: ' + GS.fmtBytes(Math.round(s.rate)) + (axisStep ? '/step' : '/s'), color: GS.color(i), dash: [4, 4], width: 1, show: i < 8, spanGaps: false });
      data.push(fit);
    });
  }
  if (series.length) {
    GS.plot(body, {
      name: 'growth', title: 'Live bytes of each suspect site ' + (axisStep ? 'per step' : 'over time'),
      data: data, series: series, height: 300, zoom: true,
      xFmt: axisStep ? function (v) { return 'step ' + Math.round(v); } : GS.fmtSec,
      xTick: axisStep ? function (v) { return String(Math.round(v)); } : null,
      xLabel: axisStep ? 'step' : 'time',
      hint: (axisStep && gx.stride > 1 ? 'Every ' + gx.stride + 'th step sampled. ' : '') + 'Dashed: the fitted line over its window.',
    });
  } else {
    body.appendChild(GS.note('Live bytes per step are not available' + (x && x.error ? ': ' + x.error : '') + '; the table has the fit.'));
  }
  var rows = sus.map(function (s, i) {
    return GS.el('tr', { class: s.suppressed ? 'suppressed' : null, 'data-stack': s.stack_id },
      GS.el('td', null, GS.el('span', { class: 'swatch', style: { background: GS.color(i) } }), ' ',
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
