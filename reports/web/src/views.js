// The Peak and Temporary sections: what was live when the process's total
// peaked, by site (heaptrack's and memray's peak view), and the allocations
// freed soon after they were made, by site (heaptrack -T): the report's
// peak.sites and temporary (docs/report-json.md), the same sites and
// figures as `gcspy report --format peak|temporary`. Bytes formatted (KiB,
// MiB); the exact value stays on the cell (data-value, title).
'use strict';

function siteCell(s) {
  var py = GS.pythonCaller(s.stack);
  return GS.el('td', { class: 'site' }, s.site ? s.site.label : 'stack ' + s.stack_id + ' (not symbolized)',
    py ? GS.el('div', { class: 'pycaller' }, py) : null);
}

function bytesCell(n) {
  return GS.el('td', { class: 'num', 'data-value': String(n), title: GS.fmtCount(n) + ' bytes' }, GS.fmtBytes(n));
}

function countCell(n) {
  return GS.el('td', { class: 'num', 'data-value': String(n) }, GS.fmtCount(n));
}

// One view: its intro line, then a table of its sites (cells(s): the
// figure cells after site and memory), or why there is none.
function renderView(body, v, intro, none, cls, heads, cells) {
  if (!v || !v.sites) {
    body.appendChild(GS.note('Not in this report: it was made without the sites\' figures (gcspy check --json).'));
    return;
  }
  body.appendChild(GS.el('p', null, intro(v)));
  if (!v.sites.length) {
    body.appendChild(GS.note(none));
    return;
  }
  var box = GS.el('div', { class: 'scroll' }, GS.el('table', { class: 'grid ' + cls },
    GS.el('thead', null, GS.el('tr', null, ['site', 'memory'].concat(heads).map(function (h, i) {
      return GS.el('th', { class: i > 1 ? 'num' : null }, h);
    }))),
    GS.el('tbody', null, v.sites.map(function (s) {
      return GS.el('tr', { class: 'site-row', 'data-stack': s.stack_id }, siteCell(s), GS.el('td', null, s.memory), cells(s));
    }))));
  body.appendChild(box);
  if (v.sites_more) body.appendChild(GS.note('+' + GS.fmtCount(v.sites_more) + ' more sites (--max-groups).'));
}

GS.renderPeak = function (body, p) {
  renderView(body, p.peak, function (pk) {
    return GS.fmtBytes(pk.live_bytes) + ' live at ' + GS.fmtNs(pk.t_ns) +
      ' after the start, when the live total peaked (summed by time), by site, largest first:';
  }, 'No site held memory then.', 'peak-table', ['bytes at the peak', 'blocks', 'at the end'], function (s) {
    return [bytesCell(s.bytes), countCell(s.blocks), bytesCell(s.end_bytes)];
  });
};

GS.renderTemporary = function (body, p) {
  renderView(body, p.temporary, function (t) {
    return GS.fmtCount(t.allocs) + ' of ' + GS.fmtCount(t.of_allocs) + ' allocations (' + GS.fmtBytes(t.bytes) + ') were freed within ' +
      GS.fmtNs(t.threshold_ns) + ' of being made, by the events\' clock; by site, most first:';
  }, 'None.', 'temporary-table', ['temporary', 'of allocations', 'their bytes'], function (s) {
    return [countCell(s.allocs), countCell(s.of_allocs), bytesCell(s.bytes)];
  });
};
