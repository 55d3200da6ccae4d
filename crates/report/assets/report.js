// Draws the report's charts with uPlot from the embedded page description and columns.
// Charts over the run's time share one x range and zoom together; thresholds are dashed,
// throttled stretches shaded, dropped frames red ticks, stalls numbered lines. With
// "#selftest" in the address the page also measures itself (drawn pixels, time to draw,
// time to redraw a zoom) into the hidden "selftest" element, for tests and benchmarks.
(function () {
  'use strict';
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message)); });
  var page = JSON.parse(document.getElementById('page').textContent);
  var columns = JSON.parse(document.getElementById('columns').textContent);
  var dpr = window.devicePixelRatio || 1;
  var single = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22', '#7f7f7f'];
  var families = [
    ['#1f77b4', '#17becf', '#6baed6', '#08519c', '#9ecae1'],
    ['#d62728', '#ff7f0e', '#fc9272', '#a50f15', '#fdae6b'],
    ['#2ca02c', '#bcbd22', '#74c476', '#006d2c', '#c7e9c0'],
    ['#9467bd', '#e377c2', '#bcbddc', '#54278f', '#fbb4ae']
  ];
  var limitDash = [[10, 4], [3, 3], [14, 4, 3, 4]];
  var runs = page.sections.length;

  function colourOf(chart, i) {
    var s = chart.series[i];
    if (runs < 2) return single[i % single.length];
    var k = 0;
    for (var j = 0; j < i; j++) if (chart.series[j].run === s.run) k++;
    var f = families[s.run % families.length];
    return f[k % f.length];
  }

  function fmt(v) {
    if (v == null) return '-';
    var a = Math.abs(v);
    if (a >= 1000) return v.toFixed(0);
    if (a >= 100) return v.toFixed(1);
    if (a >= 1) return v.toFixed(2);
    return v.toPrecision(3);
  }

  function unitOf(label) {
    var m = /\(([^,)]*)/.exec(label);
    return m ? ' ' + m[1] : (label === '%' ? '%' : '');
  }

  function dataOf(chart) {
    var groups = [], byX = {};
    chart.series.forEach(function (s, i) {
      var g = byX[s.x];
      if (!g) { g = byX[s.x] = { x: s.x, idx: [] }; groups.push(g); }
      g.idx.push(i);
    });
    function y(i) {
      var c = columns[chart.series[i].y];
      return chart.y_log ? c.map(function (v) { return v > 0 ? v : null; }) : c;
    }
    var order = [];
    var tables = groups.map(function (g) {
      order = order.concat(g.idx);
      return [columns[g.x]].concat(g.idx.map(y));
    });
    var data = tables.length === 1 ? tables[0] : uPlot.join(tables);
    if (chart.x_log) {
      // A log axis has no place for zero.
      data[0] = data[0].map(function (v) { return v > 0 ? v : 1e-3; });
    }
    return { data: data, order: order };
  }

  var timeRange = [0, 0];
  page.charts.forEach(function (c) {
    if (!c.x_is_time) return;
    c.series.forEach(function (s) {
      var x = columns[s.x];
      if (x.length) timeRange[1] = Math.max(timeRange[1], x[x.length - 1]);
    });
  });

  function drawBands(u, chart) {
    if (!chart.bands.length) return;
    var b = u.bbox, ctx = u.ctx;
    ctx.save();
    ctx.fillStyle = 'rgba(207, 34, 46, 0.13)';
    chart.bands.forEach(function (band) {
      var l = Math.max(u.valToPos(band.from, 'x', true), b.left);
      var r = Math.min(u.valToPos(band.to, 'x', true), b.left + b.width);
      if (r > l) ctx.fillRect(l, b.top, Math.max(r - l, dpr), b.height);
    });
    ctx.restore();
  }

  function drawMarks(u, chart) {
    if (!chart.marks.length) return;
    var b = u.bbox, ctx = u.ctx;
    ctx.save();
    ctx.beginPath();
    ctx.rect(b.left, b.top, b.width, b.height);
    ctx.clip();
    ctx.font = (11 * dpr) + 'px sans-serif';
    chart.marks.forEach(function (m) {
      var x = Math.round(u.valToPos(m.x, 'x', true)) + 0.5;
      if (x < b.left || x > b.left + b.width) return;
      ctx.beginPath();
      if (m.kind === 'drop') {
        ctx.strokeStyle = 'rgba(207, 34, 46, 0.85)';
        ctx.lineWidth = dpr;
        ctx.moveTo(x, b.top);
        ctx.lineTo(x, b.top + 12 * dpr);
        ctx.stroke();
      } else {
        ctx.strokeStyle = '#333';
        ctx.lineWidth = dpr;
        ctx.setLineDash([4 * dpr, 3 * dpr]);
        ctx.moveTo(x, b.top);
        ctx.lineTo(x, b.top + b.height);
        ctx.stroke();
        ctx.setLineDash([]);
        ctx.fillStyle = '#111';
        ctx.fillText(m.label.replace(/^.*: /, ''), x + 3 * dpr, b.top + 24 * dpr);
      }
    });
    ctx.restore();
  }

  var plots = [], timePlots = [], syncing = false;
  var zoomState = new WeakMap();
  function zoomed(u) {
    var z = zoomState.get(u);
    if (!z) { z = { x: false, y: false }; zoomState.set(u, z); }
    return z;
  }

  function make(chart, el) {
    var built = dataOf(chart);
    var yUnit = unitOf(chart.y_label);
    var series = [{ label: chart.x_label, value: function (u, v) { return v == null ? '-' : fmt(v) + unitOf(chart.x_label); } }];
    built.order.forEach(function (i) {
      var s = chart.series[i];
      var limitIdx = chart.series.slice(0, i).filter(function (o) { return o.style === 'limit'; }).length;
      series.push({
        label: s.label,
        stroke: colourOf(chart, i),
        width: s.style === 'limit' ? 1.25 : 1.5,
        dash: s.style === 'limit' ? limitDash[limitIdx % limitDash.length] : undefined,
        spanGaps: s.style !== 'line',
        paths: s.style === 'step' ? uPlot.paths.stepped({ align: 1 }) : undefined,
        // Lines need two points; a short run's few samples are drawn as dots too.
        points: { show: built.data[0].length < 60, size: 5 },
        value: function (u, v) { return v == null ? '-' : fmt(v) + yUnit; }
      });
    });
    var opts = {
      width: Math.max(320, el.clientWidth || 1000),
      height: 300,
      series: series,
      // uPlot asks a scale's range function both when it fits the data and when a zoom
      // sets the scale; a zoom (flagged in `zoomed`) keeps what was asked for.
      scales: {
        x: chart.x_log ? { time: false, distr: 3, log: 10 } :
          (chart.x_is_time ? { time: false, range: function (u, min, max) {
            if (zoomed(u).x) return [min, max];
            return [Math.min(min, timeRange[0]), Math.max(max, timeRange[1], min + 1e-3)];
          } } : { time: false }),
        y: chart.y_log ? { distr: 3, log: 10 } :
          { range: function (u, min, max) {
            if (zoomed(u).y) return [min, max];
            // From zero (a little below, so a line at zero is seen, not hidden by the axis).
            var lo = Math.min(0, min || 0), hi = chart.y_max || (max > 0 ? max * 1.05 : 1);
            return [lo - (hi - lo) * 0.02, hi];
          } }
      },
      axes: [
        { label: chart.x_label, stroke: '#444', grid: { stroke: '#eceef1' }, ticks: { stroke: '#ccc' } },
        { label: chart.y_label, stroke: '#444', size: 64, grid: { stroke: '#eceef1' }, ticks: { stroke: '#ccc' },
          values: chart.y_log ? undefined : function (u, vals) { return vals.map(fmt); } }
      ],
      // Drag sideways to zoom in time, up or down to zoom the values (a spike need not
      // flatten the rest).
      cursor: Object.assign({ drag: { x: true, y: true, uni: 40 } },
        chart.x_is_time ? { sync: { key: 'sinkrate-time' } } : {}),
      legend: { live: true },
      hooks: {
        setSelect: [function (u) {
          // A drag is about to zoom: x if it was sideways, y if it was not the full height.
          if (u.select.width > 0) zoomed(u).x = true;
          if (u.select.height > 0 && u.select.height < u.over.clientHeight - 1) zoomed(u).y = true;
        }],
        drawClear: [function (u) { drawBands(u, chart); }],
        draw: [function (u) { drawMarks(u, chart); }],
        setScale: [function (u, key) {
          if (key !== 'x' || syncing || !chart.x_is_time) return;
          syncing = true;
          var s = u.scales.x;
          timePlots.forEach(function (o) {
            if (o !== u && (o.scales.x.min !== s.min || o.scales.x.max !== s.max)) {
              zoomed(o).x = true;
              o.setScale('x', { min: s.min, max: s.max });
            }
          });
          syncing = false;
        }]
      }
    };
    var u = new uPlot(opts, built.data, el);
    // A double-click zooms out: back to the fitted ranges (before uPlot's own handler).
    u.root.addEventListener('dblclick', function () { zoomed(u).x = false; zoomed(u).y = false; }, true);
    plots.push({ u: u, chart: chart });
    if (chart.x_is_time) {
      timePlots.push(u);
      panAndWheel(u);
    }
  }

  // Shift-drag pans in time; Ctrl or Alt with the wheel zooms around the cursor (the plain
  // wheel keeps scrolling the page).
  function panAndWheel(u) {
    u.root.addEventListener('mousedown', function (e) {
      if (!e.shiftKey || e.button !== 0 || !u.over.contains(e.target)) return;
      e.stopPropagation();
      e.preventDefault();
      var x0 = e.clientX, min = u.scales.x.min, max = u.scales.x.max;
      var per = (max - min) / Math.max(1, u.over.clientWidth);
      function move(ev) {
        var d = (ev.clientX - x0) * per;
        zoomed(u).x = true;
        u.setScale('x', { min: min - d, max: max - d });
      }
      function up() {
        document.removeEventListener('mousemove', move);
        document.removeEventListener('mouseup', up);
      }
      document.addEventListener('mousemove', move);
      document.addEventListener('mouseup', up);
    }, true);
    u.over.addEventListener('wheel', function (e) {
      if (!e.altKey && !e.ctrlKey) return;
      e.preventDefault();
      var at = u.posToVal(e.clientX - u.over.getBoundingClientRect().left, 'x');
      var k = e.deltaY < 0 ? 0.8 : 1.25, min = u.scales.x.min, max = u.scales.x.max;
      zoomed(u).x = true;
      u.setScale('x', { min: at - (at - min) * k, max: at + (max - at) * k });
    }, { passive: false });
  }

  document.querySelectorAll('figure.chart').forEach(function (fig) {
    var chart = page.charts[+fig.getAttribute('data-chart')];
    try {
      make(chart, fig.querySelector('.plot'));
    } catch (e) {
      errors.push(chart.id + ': ' + e.message);
      fig.querySelector('.plot').textContent = 'This chart could not be drawn: ' + e.message;
    }
  });

  window.addEventListener('resize', function () {
    plots.forEach(function (p) {
      var w = p.u.root.parentNode.clientWidth;
      if (w && Math.abs(w - p.u.width) > 4) p.u.setSize({ width: w, height: 300 });
    });
  });

  if (location.hash !== '#selftest') return;
  // Every chart drawn now, synchronously: the time since navigation is the time to draw.
  plots.forEach(function (p) { p.u.batch(function (u) { u.redraw(false, false); }); });
  var out = { ready_ms: performance.now(), charts: [], zoom_ms: [], errors: errors };
  plots.forEach(function (p) {
    var u = p.u, b = u.bbox;
    var px = u.ctx.getImageData(b.left, b.top, Math.max(1, b.width), Math.max(1, b.height)).data;
    var coloured = 0;
    for (var i = 0; i < px.length; i += 4) {
      var hi = Math.max(px[i], px[i + 1], px[i + 2]), lo = Math.min(px[i], px[i + 1], px[i + 2]);
      if (px[i + 3] > 0 && hi - lo > 60) coloured++;
    }
    out.charts.push({ id: p.chart.id, series: u.series.length - 1, points: u.data[0].length,
      x_label: u.axes[0].label, y_label: u.axes[1].label, coloured_pixels: coloured });
  });
  timePlots.forEach(function (u) {
    var min = u.scales.x.min, max = u.scales.x.max;
    var t = performance.now();
    syncing = true;
    zoomed(u).x = true;
    u.batch(function () { u.setScale('x', { min: min + (max - min) * 0.25, max: min + (max - min) * 0.5 }); });
    out.zoom_ms.push(performance.now() - t);
    out.zoom_applied = (out.zoom_applied !== false) && Math.abs(u.scales.x.max - (min + (max - min) * 0.5)) < 1e-6 * Math.max(1, max);
    u.batch(function () { u.setScale('x', { min: min, max: max }); });
    zoomed(u).x = false;
    syncing = false;
  });
  // What a person's hand does, as events: Ctrl+wheel zooms, shift-drag pans, and the
  // other charts over time follow.
  if (timePlots.length > 0) {
    var u0 = timePlots[0], r = u0.over.getBoundingClientRect();
    var span = function () { return u0.scales.x.max - u0.scales.x.min; };
    var before = span();
    u0.over.dispatchEvent(new WheelEvent('wheel', { deltaY: -100, ctrlKey: true, bubbles: true, cancelable: true,
      clientX: r.left + r.width / 2, clientY: r.top + r.height / 2 }));
    u0.batch(function () {});
    out.wheel_zoomed = span() < before * 0.9;
    var min0 = u0.scales.x.min;
    u0.over.dispatchEvent(new MouseEvent('mousedown', { shiftKey: true, button: 0, bubbles: true, cancelable: true,
      clientX: r.left + r.width / 2, clientY: r.top + 10 }));
    document.dispatchEvent(new MouseEvent('mousemove', { bubbles: true, clientX: r.left + r.width / 4, clientY: r.top + 10 }));
    document.dispatchEvent(new MouseEvent('mouseup', { bubbles: true }));
    u0.batch(function () {});
    out.panned = u0.scales.x.min > min0;
    timePlots.forEach(function (o) { o.batch(function () {}); });
    out.followed = timePlots.every(function (o) {
      return Math.abs(o.scales.x.min - u0.scales.x.min) < 1e-6 && Math.abs(o.scales.x.max - u0.scales.x.max) < 1e-6;
    });
    // uPlot's own drag to zoom, after a double-click back to the whole run.
    u0.over.dispatchEvent(new MouseEvent('dblclick', { bubbles: true, button: 0, clientX: r.left + 5, clientY: r.top + 5 }));
    u0.batch(function () {});
    var whole = span();
    out.reset = whole >= before * 0.999;
    u0.over.dispatchEvent(new MouseEvent('mousedown', { bubbles: true, button: 0, clientX: r.left + r.width * 0.2, clientY: r.top + 20 }));
    u0.over.dispatchEvent(new MouseEvent('mousemove', { bubbles: true, button: 0, movementX: 40, movementY: 2,
      clientX: r.left + r.width * 0.4, clientY: r.top + 22 }));
    document.dispatchEvent(new MouseEvent('mouseup', { bubbles: true, button: 0, clientX: r.left + r.width * 0.4, clientY: r.top + 22 }));
    u0.batch(function () {});
    out.drag_zoomed = span() < whole * 0.5;
  }
  document.getElementById('selftest').textContent = JSON.stringify(out);
})();
