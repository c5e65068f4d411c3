// llmrec report: draws the charts from their JSON specs and shows the
// provenance of every value on hover. It reads data only as data: every
// string goes into the page through textContent, never as HTML or code.
(function () {
  'use strict';

  // The state the browser test reads: charts drawn, when this script
  // started and when the first chart was drawn (ms since navigation start),
  // and errors.
  var state = { total: 0, drawn: 0, script: performance.now(), first: -1, errors: [] };
  window.llmrecReport = state;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  // --- Provenance of table values, facts and verdicts ([data-prov]).
  var tip = document.getElementById('prov-tip');
  var tipFor = null;
  function showTip(target) {
    if (tipFor === target) return;
    tipFor = target;
    tip.textContent = target.getAttribute('data-prov');
    tip.hidden = false;
    var r = target.getBoundingClientRect();
    var width = document.documentElement.clientWidth;
    var left = Math.max(4, Math.min(r.left, width - tip.offsetWidth - 4));
    tip.style.left = (left + window.scrollX) + 'px';
    tip.style.top = (r.bottom + window.scrollY + 4) + 'px';
  }
  function hideTip() { tipFor = null; tip.hidden = true; }
  function provTarget(e) {
    return e.target && e.target.closest ? e.target.closest('[data-prov]') : null;
  }
  document.addEventListener('mouseover', function (e) {
    var t = provTarget(e);
    if (t) showTip(t); else hideTip();
  });
  document.addEventListener('focusin', function (e) {
    var t = provTarget(e);
    if (t) showTip(t);
  });
  document.addEventListener('focusout', hideTip);
  document.addEventListener('keydown', function (e) { if (e.key === 'Escape') hideTip(); });

  // --- Formatting.
  function pad(n) { return (n < 10 ? '0' : '') + n; }
  // Seconds since the start as h:mm:ss (or m:ss below an hour).
  function elapsed(s) {
    var sign = s < 0 ? '-' : '';
    s = Math.abs(s);
    var h = Math.floor(s / 3600), m = Math.floor(s % 3600 / 60), sec = Math.floor(s % 60);
    return sign + (h > 0 ? h + ':' + pad(m) : String(m)) + ':' + pad(sec);
  }
  function clock(t) {
    var d = new Date(t * 1000);
    if (isNaN(d.getTime())) return '';
    return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
  }
  function num(v, pct) {
    if (v === null || v === undefined || typeof v !== 'number' || !isFinite(v)) return 'null';
    if (pct) v = v * 100;
    var a = Math.abs(v), s;
    if (a !== 0 && (a >= 1e6 || a < 1e-3)) s = v.toExponential(3);
    else s = String(Number(v.toPrecision(4)));
    return pct ? s + ' %' : s;
  }
  function withUnit(s, spec) { return spec.unit && !spec.pct ? s + ' ' + spec.unit : s; }

  // --- Chart tooltips: built as DOM nodes from the data.
  function provOf(spec, p) {
    var v = p.value, i = null;
    if (Array.isArray(v) && v.length > 2 && typeof v[2] === 'number') i = v[2];
    else if (spec.sprov && p.seriesIndex < spec.sprov.length) i = spec.sprov[p.seriesIndex];
    return i !== null && i >= 0 && i < spec.prov.length ? spec.prov[i] : '';
  }
  function tooltip(spec) {
    return function (params) {
      var list = Array.isArray(params) ? params : [params];
      var box = el('div', 'tt');
      if (!list.length) return box;
      var first = list[0];
      if (first.componentType === 'markArea' || first.componentType === 'markLine') {
        box.appendChild(el('div', 'tt-head', first.seriesName));
        box.appendChild(el('div', 'tt-prov', first.name));
        return box;
      }
      var head;
      if (spec.x === 'elapsed') {
        var x = Array.isArray(first.value) ? first.value[0] : first.axisValue;
        head = '+' + elapsed(x) + '  ' + clock(spec.t0 + x);
      } else {
        head = first.axisValueLabel !== undefined ? first.axisValueLabel : first.name;
      }
      box.appendChild(el('div', 'tt-head', head));
      // The shaded spans under the pointer: refusals, missing data, incidents.
      var at = first.axisValue;
      (spec.areas || []).forEach(function (a) {
        if (typeof at === 'number' && at >= a.from && at <= a.to) {
          box.appendChild(el('div', 'tt-area', a.series + ': ' + a.name));
        }
      });
      list.forEach(function (p) {
        if (p.componentType !== 'series') return;
        var v = Array.isArray(p.value) ? p.value[1] : p.value;
        var row = el('div', 'tt-row');
        var dot = el('span', 'tt-dot');
        if (typeof p.color === 'string') dot.style.background = p.color;
        row.appendChild(dot);
        row.appendChild(el('span', 'tt-name', p.seriesName));
        row.appendChild(el('span', 'tt-val', v === null || v === undefined ? 'no value' : withUnit(num(v, spec.pct), spec)));
        box.appendChild(row);
        // The canonical name of the cell, as the analysis JSON has it.
        var canon = spec.canon && p.seriesIndex < spec.canon.length ? spec.canon[p.seriesIndex] : '';
        if (canon) box.appendChild(el('div', 'tt-canon', canon));
        var prov = provOf(spec, p);
        if (prov) box.appendChild(el('div', 'tt-prov', prov));
      });
      return box;
    };
  }

  function each(v, fn) {
    if (Array.isArray(v)) v.forEach(fn); else if (v) fn(v);
  }

  // prepare adds what JSON cannot carry: the formatters, as functions of
  // this script. No string of the option is ever evaluated.
  function prepare(spec) {
    var opt = spec.option;
    // The x spans of the helper series' markAreas, for the tooltip.
    spec.areas = [];
    each(opt.series, function (s) {
      each(s.markArea && s.markArea.data, function (pair) {
        if (Array.isArray(pair) && pair.length === 2 && typeof pair[0].xAxis === 'number') {
          spec.areas.push({ from: pair[0].xAxis, to: pair[1].xAxis, name: pair[0].name || '', series: s.name || '' });
        }
      });
    });
    opt.tooltip = opt.tooltip || {};
    opt.tooltip.formatter = tooltip(spec);
    opt.tooltip.className = 'llmrec-tip';
    opt.tooltip.confine = true;
    opt.tooltip.renderMode = 'html';
    opt.tooltip.transitionDuration = 0;
    if (spec.x === 'elapsed') {
      each(opt.xAxis, function (a) {
        a.axisLabel = a.axisLabel || {};
        a.axisLabel.formatter = elapsed;
        a.axisPointer = { label: { formatter: function (p) { return elapsed(p.value); } } };
      });
      each(opt.dataZoom, function (z) { z.labelFormatter = function (v) { return elapsed(v); }; });
    }
    each(opt.yAxis, function (a) {
      a.axisLabel = a.axisLabel || {};
      a.axisLabel.formatter = function (v) { return num(v, spec.pct); };
    });
    return opt;
  }

  // --- Drawing: a few charts per task, so the first shows at once.
  var divs = Array.prototype.slice.call(document.querySelectorAll('div.chart[data-spec]'));
  var instances = [];
  state.total = divs.length;

  function drawOne(div) {
    try {
      var script = document.getElementById(div.getAttribute('data-spec'));
      var spec = JSON.parse(script.textContent);
      var chart = echarts.init(div, null, { renderer: 'canvas' });
      chart.on('finished', function done() {
        chart.off('finished', done);
        div.setAttribute('data-drawn', '1');
        state.drawn++;
        if (state.first < 0) state.first = performance.now();
      });
      chart.setOption(prepare(spec));
      instances.push(chart);
    } catch (err) {
      state.errors.push(div.id + ': ' + err);
      div.textContent = 'This chart could not be drawn: ' + err;
      console.error('llmrec: chart ' + div.id + ': ' + err);
    }
  }

  var next = 0;
  function drawSome() {
    var start = performance.now();
    while (next < divs.length) {
      drawOne(divs[next++]);
      if (performance.now() - start > 30) break;
    }
    if (next < divs.length) setTimeout(drawSome, 0);
  }
  if (typeof echarts === 'undefined') {
    state.errors.push('ECharts is missing');
    console.error('llmrec: ECharts is missing');
  } else {
    drawSome();
  }

  var resizing = 0;
  window.addEventListener('resize', function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () { instances.forEach(function (c) { c.resize(); }); }, 100);
  });
})();
