// The Fragmentation section:
//   - the ratio (1 - largest free extent / free) and the largest free extent
//     over time, for the host heap (gcspy-extra snapshots) and each device
//     allocator (the report's timeline); glibc's own figures over time;
//   - address-space maps over time (gcspy-extra maps): rows are address
//     space, columns snapshots; a cell's colour is the age of its bytes or the
//     site holding most of it, its strength how full it is; pale cells are
//     holes. A device's map shows what cudaMalloc saw beside the PyTorch
//     caching allocator's blocks inside those segments;
//   - each device's segments and blocks at its peak and at the end, laid out
//     as PyTorch's memory_viz draws allocator state.
// Canvas for the cells (thousands of them), d3 scales and axes around them.
'use strict';

var HOLE = '#f2f2f2';

function devRatio(d, i) {
  var r = d.reserved[i], u = d.in_use[i], l = d.largest_free[i];
  if (r === null || u === null || l === null) return null;
  var free = r - u;
  return free > 0 ? Math.max(0, 1 - l / free) : 0;
}

function overTime(body, p, x) {
  var tl = p.timeline, snaps = (x && x.snapshots_ns) || [];
  var ratio = [], extent = [];
  if (snaps.length && x.host_frag) {
    var sx = snaps.map(function (t) { return t / 1e9; });
    ratio.push({ label: 'host heap', color: GS.kindColors.host, xs: sx, ys: x.host_frag.ratio });
    extent.push({ label: 'host heap: largest free', color: GS.kindColors.host, xs: sx, ys: x.host_frag.largest_free });
    extent.push({ label: 'host heap: free', color: GS.kindColors.host, dash: [5, 3], xs: sx, ys: x.host_frag.free_bytes });
  }
  if (tl && tl.devices) {
    var bx = GS.bucketXs(tl);
    tl.devices.forEach(function (d, j) {
      var name = 'device ' + d.device + ' ' + GS.allocName(d.allocator), c = GS.color(3 + j * 2);
      ratio.push({ label: name, color: c, xs: bx, ys: bx.map(function (_, i) { return devRatio(d, i); }) });
      extent.push({ label: name + ': largest free', color: c, xs: bx, ys: d.largest_free });
      extent.push({ label: name + ': free', color: c, dash: [5, 3], xs: bx,
        ys: d.reserved.map(function (r, i) { return r === null || d.in_use[i] === null ? null : r - d.in_use[i]; }) });
    });
  }
  if (!ratio.length) {
    body.appendChild(GS.note('No host heap blocks or device samples to measure fragmentation over time.'));
    return;
  }
  var cols = GS.el('div', { class: 'cols' });
  var a = GS.el('div'), b = GS.el('div');
  cols.appendChild(a);
  cols.appendChild(b);
  body.appendChild(cols);
  GS.plot(a, {
    name: 'frag-ratio', title: 'Fragmentation ratio over time', height: 220,
    data: GS.mergeXs(ratio), series: ratio, yRange: [0, 1],
    yFmt: function (v) { return GS.fmtPct(v, 0); }, yTitle: 'fragmentation ratio',
    hint: '1 − largest free extent / free bytes: 0 when the free space is one piece, near 1 when it is dust.',
  });
  GS.plot(b, {
    name: 'frag-extent', title: 'Largest free extent and free bytes', height: 220,
    data: GS.mergeXs(extent), series: extent, yTitle: 'bytes free',
  });
  var m = tl && tl.malloc;
  if (m && m.arena && m.arena.some(function (v) { return v; })) {
    var bx2 = GS.bucketXs(tl);
    var ms = [
      { label: 'arena', color: '#4e79a7', values: m.arena },
      { label: 'in use', color: '#59a14f', values: m.in_use },
      { label: 'free', color: '#e15759', values: m.free },
      { label: 'top pad', color: '#edc948', values: m.top_pad },
    ];
    GS.plot(body, {
      name: 'frag-malloc', title: "glibc's heap over time (mallinfo2)", height: 200,
      data: [bx2].concat(ms.map(function (s) { return s.values; })), series: ms, yTitle: 'bytes',
    });
  }
}

function endState(body, p) {
  var f = p.fragmentation, h = f.heap;
  var rows = [];
  rows.push(GS.el('tr', null, GS.el('th', null, 'host heap at exit'),
    GS.el('td', null, GS.fmtBytes(h.live_bytes) + ' live in ' + GS.fmtCount(h.live_blocks) + ' blocks, ' + h.regions + ' regions; ' +
      GS.fmtBytes(h.free_bytes) + ' free between them in ' + GS.fmtCount(h.gaps) + ' gaps, the largest ' + GS.fmtBytes(h.largest_free) +
      '; ratio ' + GS.fmtPct(h.ratio) + '; ' + GS.fmtCount(h.mmapped_blocks) + ' blocks (' + GS.fmtBytes(h.mmapped_bytes) + ') mapped on their own')));
  if (f.malloc) {
    rows.push(GS.el('tr', null, GS.el('th', null, 'glibc (last sample)'),
      GS.el('td', null, 'arena ' + GS.fmtBytes(f.malloc.arena) + ', in use ' + GS.fmtBytes(f.malloc.in_use) + ', free ' + GS.fmtBytes(f.malloc.free) +
        ', top pad ' + GS.fmtBytes(f.malloc.top_pad) + ', mmapped ' + GS.fmtBytes(f.malloc.mmapped) + '; peak arena ' + GS.fmtBytes(f.malloc.peak_arena))));
  }
  (f.devices || []).forEach(function (d) {
    rows.push(GS.el('tr', null, GS.el('th', null, 'device ' + d.device + ' ' + GS.allocName(d.allocator)),
      GS.el('td', null, 'reserved ' + GS.fmtBytes(d.reserved) + ', in use ' + GS.fmtBytes(d.in_use) + ' in ' + d.segments + ' segments, largest free ' +
        GS.fmtBytes(d.largest_free) + ', ratio ' + GS.fmtPct(d.ratio) + '; worst ' + GS.fmtPct(d.worst_ratio) + ' at ' + GS.fmtNs(d.worst_t_ns) +
        '; peak reserved ' + GS.fmtBytes(d.peak_reserved))));
  });
  // PyTorch's caching allocator: the latest snapshot per device; its
  // tensors lie inside the segments, cached free blocks are reserved memory
  var ca = f.caching_allocator;
  if (ca) {
    (ca.devices || []).forEach(function (d) {
      rows.push(GS.el('tr', null, GS.el('th', null, 'device ' + d.device + ' PyTorch caching allocator'),
        GS.el('td', null, 'snapshot at ' + GS.fmtNs(d.t_ns) + ' (' + d.reason + '): reserved ' + GS.fmtBytes(d.reserved_bytes) + ' in ' +
          GS.fmtCount(d.segments) + ' segments; allocated ' + GS.fmtBytes(d.allocated_bytes) + ' in ' + GS.fmtCount(d.allocated_blocks) +
          ' blocks (requested ' + GS.fmtBytes(d.requested_bytes) + '); pending free ' + GS.fmtBytes(d.pending_free_bytes) + '; cached free ' +
          GS.fmtBytes(d.cached_free_bytes) + ' in ' + GS.fmtCount(d.cached_free_blocks) + ' blocks, the largest ' +
          GS.fmtBytes(d.largest_cached_free) + '; history ' + GS.fmtCount(d.events) + ' events')));
    });
    rows.push(GS.el('tr', null, GS.el('th', null, 'PyTorch tensors at exit'),
      GS.el('td', null, GS.fmtBytes(ca.live_bytes) + ' in ' + GS.fmtCount(ca.live_blocks) + ' blocks inside the segments (peak ' +
        GS.fmtBytes(ca.peak_bytes) + '), from ' + GS.fmtCount(ca.snapshots) + ' snapshots')));
  }
  body.appendChild(GS.el('table', { class: 'facts' }, GS.el('tbody', null, rows)));
}

// ---- address-space maps ----

GS.siteText = function (sites, i) {
  if (i === 255) return 'empty';
  if (i === 254 || !sites[i]) return 'another site';
  return GS.frameText(sites[i]);
};

// Colour tables for drawLayer: 256 entries of r, g, b.
var VIRIDIS = null, SITES = null;
function tables() {
  if (VIRIDIS) return;
  VIRIDIS = new Uint8Array(256 * 3);
  SITES = new Uint8Array(256 * 3);
  for (var i = 0; i < 256; i++) {
    var v = d3.rgb(d3.interpolateViridis(i / 255));
    VIRIDIS.set([v.r, v.g, v.b], i * 3);
    var s = d3.rgb(i === 254 ? '#9e9e9e' : GS.color(i));
    SITES.set([s.r, s.g, s.b], i * 3);
  }
}

// The cells as pixels: column px shows the first snapshot at or after its
// time (a snapshot's column spans back to the one before), row py the row
// its height falls in; written into one ImageData, so a map of any size
// costs one pass over the canvas's pixels.
function drawLayer(cv, map, layer, times, mode, dur, W, H) {
  tables();
  var dpr = devicePixelRatio || 1, PW = Math.round(W * dpr), PH = Math.round(H * dpr);
  cv.width = PW;
  cv.height = PH;
  cv.style.width = W + 'px';
  cv.style.height = H + 'px';
  var ctx = cv.getContext('2d'), img = ctx.createImageData(PW, PH), d = img.data;
  var R = map.rows, occ = layer.occ, age = layer.age, site = layer.site;
  var colK = new Int32Array(PW), k = 0;
  for (var px = 0; px < PW; px++) {
    var t = (px + 0.5) / PW * dur;
    while (k < times.length - 1 && times[k] < t) k++;
    colK[px] = k * R;
  }
  var hole = d3.rgb(HOLE), pal = mode === 'age' ? VIRIDIS : SITES, src = mode === 'age' ? age : site;
  for (var py = 0; py < PH; py++) {
    var r = Math.min(R - 1, Math.floor((py + 0.5) / PH * R)), off = py * PW * 4;
    for (px = 0; px < PW; px++, off += 4) {
      var i = colK[px] + r, o = occ[i];
      if (!o) {
        d[off] = hole.r; d[off + 1] = hole.g; d[off + 2] = hole.b;
      } else {
        var f = 0.2 + 0.8 * o / 255, w = 255 * (1 - f), c = src[i] * 3;
        d[off] = pal[c] * f + w; d[off + 1] = pal[c + 1] * f + w; d[off + 2] = pal[c + 2] * f + w;
      }
      d[off + 3] = 255;
    }
  }
  ctx.putImageData(img, 0, 0);
  ctx.strokeStyle = '#333';
  ctx.lineWidth = dpr;
  map.regions.forEach(function (g, j) {
    if (!j) return;
    var y = Math.round(g.row / R * PH) + 0.5;
    ctx.beginPath();
    ctx.moveTo(0, y);
    ctx.lineTo(PW, y);
    ctx.stroke();
  });
}

function hexAdd(hex, n) {
  return '0x' + (BigInt(hex) + BigInt(Math.round(n))).toString(16);
}

function mapBlock(parent, map, x, mode, dur) {
  var times = x.snapshots_ns;
  var box = GS.el('div', { class: 'addrmap', 'data-map': map.name });
  var omitted = map.regions_total > map.regions.length
    ? ' (the ' + map.regions.length + ' fullest of ' + map.regions_total + ' regions shown)' : '';
  box.appendChild(GS.el('h4', null, map.name + ': ' + map.regions.length + ' regions' + omitted));
  var row = GS.el('div', { class: 'addrmap-row' });
  box.appendChild(row);
  parent.appendChild(box);
  var avail = Math.max(400, (parent.clientWidth || 1000) - 40);
  var nl = map.layers.length;
  var W = Math.max(220, Math.min(640, Math.floor((avail - 120 * nl) / nl)));
  var H = Math.max(160, Math.min(480, map.rows * 2));
  var tip = GS.el('div', { class: 'tooltip', style: { display: 'none' } });
  map.layers.forEach(function (layer, li) {
    var dec = { occ: GS.b64(layer.occ), age: GS.b64(layer.age), site: GS.b64(layer.site) };
    var cell = GS.el('div', { class: 'addrmap-layer', 'data-layer': layer.name });
    var peak = GS.maxOf([layer.live_bytes]);
    cell.appendChild(GS.el('div', { class: 'layer-title' }, layer.name + ' (peak ' + GS.fmtBytes(peak) + ')'));
    var holder = GS.el('div', { class: 'addrmap-plot' });
    var cv = GS.el('canvas', { class: 'addrmap-canvas' });
    var svg = d3.select(holder).append('svg').attr('width', W + 110).attr('height', H + 30);
    holder.insertBefore(cv, holder.firstChild);
    cv.style.left = '100px';
    cell.appendChild(holder);
    row.appendChild(cell);
    drawLayer(cv, map, dec, times, mode, dur, W, H);
    // axes: time below, region start addresses on the left
    var xs = d3.scaleLinear().domain([0, dur / 1e9]).range([0, W]);
    svg.append('g').attr('transform', 'translate(100,' + H + ')')
      .call(d3.axisBottom(xs).ticks(Math.max(2, Math.floor(W / 90))).tickFormat(function (v) { return GS.fmtSec(v); }));
    var rh = H / map.rows;
    var lab = svg.append('g').attr('class', 'regions');
    map.regions.forEach(function (g) {
      if (g.rows * rh < 11 && map.regions.length > 1 && g.row) return;
      lab.append('text').attr('x', 96).attr('y', g.row * rh + 10).attr('text-anchor', 'end').text(g.lo);
      if (g.rows * rh >= 24)
        lab.append('text').attr('x', 96).attr('y', g.row * rh + 22).attr('text-anchor', 'end').attr('class', 'dim').text(GS.fmtBytes(g.bytes));
    });
    cv.addEventListener('mousemove', function (e) {
      var r = cv.getBoundingClientRect(), px = e.clientX - r.left, py = e.clientY - r.top;
      var t = px / W * dur, k = d3.bisectLeft(times, t);
      if (k >= times.length) k = times.length - 1;
      var rowi = Math.min(map.rows - 1, Math.floor(py / rh)), g = null;
      map.regions.forEach(function (q) { if (rowi >= q.row && rowi < q.row + q.rows) g = q; });
      if (!g) { tip.style.display = 'none'; return; }
      var step = g.bytes / g.rows, off = (rowi - g.row) * step, i = k * map.rows + rowi;
      tip.textContent = '';
      GS.append(tip, [GS.el('div', null, layer.name + ' at ' + GS.fmtNs(times[k])),
        GS.el('div', null, hexAdd(g.lo, off) + ' – ' + hexAdd(g.lo, off + step) + ' (' + GS.fmtBytes(Math.round(step)) + ')'),
        GS.el('div', null, dec.occ[i] ? GS.fmtPct(dec.occ[i] / 255, 0) + ' in use, mean age ' + GS.fmtNs(dec.age[i] / 255 * dur) : 'a hole: nothing live'),
        dec.occ[i] ? GS.el('div', null, 'mostly ' + GS.siteText(x.sites, dec.site[i])) : null]);
      tip.style.display = 'block';
      tip.style.left = (e.pageX + 12) + 'px';
      tip.style.top = (e.pageY + 12) + 'px';
    });
    cv.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
    cell.redraw = function (m) { drawLayer(cv, map, dec, times, m, dur, W, H); };
    if (li === 0) box.redraws = [];
    box.redraws.push(cell.redraw);
  });
  document.body.appendChild(tip);
  GS.tooltips.push(tip);
  return box;
}

function legend(el, mode, sites) {
  GS.clear(el);
  if (mode === 'age') {
    var cv = GS.el('canvas', { width: 200, height: 12, class: 'age-bar' });
    var ctx = cv.getContext('2d');
    for (var i = 0; i < 200; i++) {
      ctx.fillStyle = d3.interpolateViridis(i / 199);
      ctx.fillRect(i, 0, 1, 12);
    }
    GS.append(el, ['age: new ', cv, ' as old as the run; pale: partly used; ', GS.el('span', { class: 'swatch', style: { background: HOLE } }), ' holes']);
    return;
  }
  GS.append(el, [GS.el('span', null, 'sites: ')]);
  sites.forEach(function (s, i) {
    el.appendChild(GS.el('span', { class: 'site-key' }, GS.el('span', { class: 'swatch', style: { background: GS.color(i) } }), GS.frameText(s)));
  });
  el.appendChild(GS.el('span', { class: 'site-key' }, GS.el('span', { class: 'swatch', style: { background: '#9e9e9e' } }), 'other sites'));
}

function maps(body, p, x) {
  if (!x || x.error) {
    body.appendChild(GS.note('Address-space maps are not available: ' + (x ? x.error : 'no data') + '.'));
    return;
  }
  if (!x.maps.length) {
    body.appendChild(GS.note('No heap or device blocks were live at any snapshot: no address-space map to draw.'));
    return;
  }
  var dur = p.duration_ns || 1, mode = 'age';
  var lg = GS.el('div', { class: 'legend' });
  var boxes = [];
  var setMode = function (m) {
    mode = m;
    bar.querySelectorAll('button').forEach(function (b) { b.classList.toggle('on', b.dataset.mode === m); });
    legend(lg, m, x.sites);
    boxes.forEach(function (b) { b.redraws.forEach(function (f) { f(m); }); });
  };
  var bar = GS.el('div', { class: 'toolbar' }, 'colour by ',
    GS.el('button', { type: 'button', 'data-mode': 'age', class: 'on', on: { click: function () { setMode('age'); } } }, 'age'),
    GS.el('button', { type: 'button', 'data-mode': 'site', on: { click: function () { setMode('site'); } } }, 'allocation site'));
  body.appendChild(GS.el('h3', null, 'Address space over time'));
  body.appendChild(GS.el('p', { class: 'hint' }, 'Rows are address space (regions of blocks less than 64 MiB apart, each given rows in proportion to its span; ' +
    'chunks glibc maps on their own are left out of the host heap), columns the ' + x.snapshots_ns.length + ' snapshots over the run. ' +
    'Hover a cell for its addresses and owner.'));
  body.appendChild(bar);
  body.appendChild(lg);
  legend(lg, mode, x.sites);
  x.maps.forEach(function (m) { boxes.push(mapBlock(body, m, x, mode, dur)); });
}

// ---- device allocator state (memory_viz's segment view) ----

function stateBlock(parent, dev, st, sites) {
  var W = Math.max(400, Math.min(1100, (parent.clientWidth || 1000) - 20));
  var segs = st.segments, blocks = st.blocks;
  var title = 'device ' + dev.device + ' at ' + (st.when === 'peak' ? 'its peak' : 'the end') + ' (' + GS.fmtNs(st.t_ns) + '): ';
  var box = GS.el('div', { class: 'devstate', 'data-when': st.when });
  var units = segs.length ? segs.map(function (s) { return { addr: s[0], size: s[1], site: s[2], blocks: [] }; })
    : blocks.map(function (b) { return { addr: b[1], size: b[2], site: b[3], blocks: [] }; });
  if (segs.length) blocks.forEach(function (b) { if (b[0] >= 0 && units[b[0]]) units[b[0]].blocks.push(b); });
  var used = 0, total = 0;
  units.forEach(function (u) { total += u.size; });
  blocks.forEach(function (b) { used += b[2]; });
  box.appendChild(GS.el('h4', null, title + (segs.length
    ? segs.length + ' segments, ' + GS.fmtBytes(total) + (dev.torch_layer ? ', ' + blocks.length + ' PyTorch blocks in them (' + GS.fmtBytes(used) + ')' : '')
    : blocks.length + ' PyTorch blocks, ' + GS.fmtBytes(total) + ' (no cudaMalloc seen)') +
    (st.segments_omitted ? '; ' + st.segments_omitted + ' smaller segments left out' : '') +
    (st.blocks_omitted ? '; ' + st.blocks_omitted + ' smaller blocks left out' : '')));
  if (!units.length) {
    box.appendChild(GS.note('Nothing allocated on this device at that moment.'));
    parent.appendChild(box);
    return;
  }
  // rows of a fixed number of bytes; a segment never straddles two rows
  var maxSeg = d3.max(units, function (u) { return u.size; });
  var perRow = Math.max(maxSeg, total / 8);
  var x = d3.scaleLinear().domain([0, perRow]).range([0, W]);
  var rowH = 22, gap = 6, rowsUsed = 0, at = 0;
  units.forEach(function (u) {
    if (at + u.size > perRow && at > 0) { rowsUsed++; at = 0; }
    u.row = rowsUsed;
    u.x = at;
    at += u.size;
  });
  var H = (rowsUsed + 1) * (rowH + gap);
  var svg = d3.select(box).append('svg').attr('width', W).attr('height', H).attr('class', 'devstate-svg');
  var g = svg.selectAll('g.seg').data(units).enter().append('g').attr('class', 'seg')
    .attr('transform', function (u) { return 'translate(' + x(u.x) + ',' + u.row * (rowH + gap) + ')'; });
  var hasBlocks = segs.length && dev.torch_layer;
  g.append('rect').attr('width', function (u) { return Math.max(1, x(u.size) - 1); }).attr('height', rowH)
    .attr('fill', function (u) { return hasBlocks ? HOLE : u.site === 254 ? '#9e9e9e' : GS.color(u.site); })
    .attr('stroke', '#555').attr('stroke-width', 0.5)
    .append('title').text(function (u) { return (segs.length ? 'segment ' : 'block ') + u.addr + ', ' + GS.fmtBytes(u.size) + ' — ' + GS.siteText(sites, u.site); });
  if (hasBlocks) {
    g.each(function (u) {
      d3.select(this).selectAll('rect.blk').data(u.blocks).enter().append('rect').attr('class', 'blk')
        .attr('x', function (b) { return x(b[1]); }).attr('width', function (b) { return Math.max(0.5, x(b[2])); })
        .attr('y', 2).attr('height', rowH - 4)
        .attr('fill', function (b) { return b[3] === 254 ? '#9e9e9e' : GS.color(b[3]); })
        .append('title').text(function (b) { return 'block at +' + b[1] + ', ' + GS.fmtBytes(b[2]) + ' — ' + GS.siteText(sites, b[3]); });
    });
  }
  parent.appendChild(box);
}

function deviceStates(body, x) {
  if (!x || x.error || !x.device_state || !x.device_state.length) return;
  body.appendChild(GS.el('h3', null, 'Device segments and blocks'));
  body.appendChild(GS.el('p', { class: 'hint' }, 'As PyTorch\'s memory_viz draws allocator state: each bar is a segment cudaMalloc (or the driver) handed out, ' +
    'rows hold a fixed number of bytes; coloured inside it, the PyTorch caching allocator\'s blocks by allocation site; pale, reserved but free. ' +
    'Hover for addresses and sites.'));
  x.device_state.forEach(function (d) {
    d.states.forEach(function (st) { stateBlock(body, d, st, x.sites); });
  });
}

GS.tooltips = [];

GS.renderFrag = function (body, p, x) {
  endState(body, p);
  overTime(body, p, x);
  maps(body, p, x);
  deviceStates(body, x);
};
