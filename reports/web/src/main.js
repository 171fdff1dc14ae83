// Entry point: reads the two JSON slots, fills the process picker, and draws
// every section for the process picked. When it is done, <body> gets
// data-ready="1" (the browser tests wait for it); a section that fails to
// draw shows the error in place and logs it, the others still draw.
'use strict';

(function () {
  function slot(id) {
    var e = document.getElementById(id);
    return e ? JSON.parse(e.textContent) : null;
  }

  var doc, extra;
  try {
    doc = slot('gcspy-data');
    extra = slot('gcspy-extra') || [];
  } catch (err) {
    document.querySelector('main').prepend(GS.el('p', { class: 'error' }, 'The report data does not parse: ' + err.message));
    console.error(err);
    return;
  }
  if (!doc || doc.format !== 'gcspy-report') {
    document.querySelector('main').prepend(GS.el('p', { class: 'error' }, 'This page holds no gcspy report.'));
    return;
  }
  if (doc.version > 1) {
    document.querySelector('main').prepend(GS.el('p', { class: 'note' }, 'The report is of format version ' + doc.version +
      ', newer than this page knows (1): what is new is not shown.'));
  }

  var sections = [
    ['summary', function (b, p, x, ctx) { GS.renderSummary(b, doc, p, ctx); }],
    ['memory', function (b, p) { GS.renderMemory(b, p); }],
    ['fragmentation', function (b, p, x) { GS.renderFrag(b, p, x); }],
    ['leaks', function (b, p) { GS.renderLeaks(b, p); }],
    ['peak', function (b, p) { GS.renderPeak(b, p); }],
    ['temporary', function (b, p) { GS.renderTemporary(b, p); }],
    ['growth', function (b, p, x) { GS.renderGrowth(b, p, x); }],
    ['pauses', function (b, p, x) { GS.renderPauses(b, p, x); }],
  ];

  var pick = document.getElementById('proc');
  doc.processes.forEach(function (p, i) {
    pick.appendChild(GS.el('option', { value: i }, GS.procName(p, i)));
  });
  if (doc.processes.length < 2) pick.parentNode.classList.add('single');

  function select(i) {
    document.body.removeAttribute('data-ready');
    pick.value = String(i);
    GS.destroyCharts();
    GS.tooltips.forEach(function (t) { t.remove(); });
    GS.tooltips = [];
    var p = doc.processes[i], x = extra[i] || null;
    document.title = 'gcspy: ' + (p.command || p.trace || 'report');
    var times = {};
    sections.forEach(function (s) {
      var t0 = performance.now();
      var body = document.querySelector('#' + s[0] + ' .body');
      GS.clear(body);
      if (!p.readable && s[0] !== 'summary') {
        body.appendChild(GS.note('The trace could not be read.'));
        return;
      }
      try {
        s[1](body, p, x, { index: i, select: select });
      } catch (err) {
        body.appendChild(GS.el('p', { class: 'error' }, 'This section failed to draw: ' + err.message));
        console.error(err);
      }
      times[s[0]] = Math.round(performance.now() - t0);
    });
    window.gcspyReport.sectionMs = times;
    // ready once what was drawn has been laid out and painted: the frame
    // after next has begun
    requestAnimationFrame(function () {
      requestAnimationFrame(function () {
        window.gcspyReport.readyMs = performance.now();
        document.body.setAttribute('data-ready', '1');
      });
    });
  }
  pick.addEventListener('change', function () { select(Number(pick.value)); });

  // A nav link's section lands below the sticky bar, however tall the bar
  // is (it wraps on a narrow window): the sections' scroll margin follows it.
  function barMargin() {
    var bar = document.getElementById('top');
    document.documentElement.style.setProperty('--bar', (bar ? bar.getBoundingClientRect().height : 0) + 8 + 'px');
  }
  barMargin();
  window.addEventListener('resize', barMargin);

  // what the browser tests and anyone at the console can look at
  window.gcspyReport = {
    data: doc,
    extra: extra,
    select: select,
    charts: function () { return GS.charts.map(function (c) { return c.name; }); },
  };
  if (!doc.processes.length) {
    document.querySelector('#summary .body').appendChild(GS.note('The report holds no process.'));
    document.body.setAttribute('data-ready', '1');
    return;
  }
  select(0);
}());
