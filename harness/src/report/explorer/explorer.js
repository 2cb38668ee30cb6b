// The ranking explorer's script. It reads the page's data from the JSON block #data and builds
// every element with createElement and textContent: no string of the data is ever parsed as
// HTML. It loads nothing (the page's Content-Security-Policy forbids it anyway).
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('data').textContent);
  var app = document.getElementById('app');
  var S = {
    left: D.baseline,
    right: D.configs.length > 1 ? (D.baseline === 0 ? 1 : 0) : D.baseline,
    measure: 0,
    sort: 0, // 0: report order; 1: delta ascending (worst first); -1: delta descending
    filters: { changed: false, worse: false, better: false, unjudged: false },
    current: 0
  };
  var byId = {};
  D.tasks.forEach(function (t, i) { byId[t.id] = i; });

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function fmt(x) { return (Math.round(x * 1000) / 1000).toFixed(3); }
  function signed(x) { return (x > 0 ? '+' : '') + fmt(x); }
  function side(c, t) { return D.runs[c][t]; }
  function topIds(c, t, n) { return side(c, t).hits.slice(0, n).map(function (h) { return h[0]; }); }
  function delta(t, m) { return side(S.right, t).values[m] - side(S.left, t).values[m]; }
  // Changed: the task's value moved on at least one of the report's measures (a reordering
  // among documents that leaves every measure equal is not a change of the verdict).
  function changed(t) {
    return D.measures.some(function (_, m) { return delta(t, m) !== 0; });
  }
  function unjudgedTop(t) {
    var task = D.tasks[t];
    return topIds(S.right, t, task.k).some(function (d) { return !(d in task.judged); });
  }
  function visible(t) {
    var f = S.filters, d = delta(t, S.measure);
    return (!f.changed || changed(t)) && (!f.worse || d < 0) && (!f.better || d > 0) &&
      (!f.unjudged || unjudgedTop(t));
  }
  // The tasks in table order (report order, or by delta with report order breaking ties).
  function order() {
    var idx = D.tasks.map(function (_, i) { return i; });
    if (S.sort !== 0) {
      idx.sort(function (a, b) { return S.sort * (delta(a, S.measure) - delta(b, S.measure)) || a - b; });
    }
    return idx;
  }
  function rankLabel(r) { return r === null || r === undefined ? '-' : String(r); }

  function picker(id, label, value, onchange) {
    var wrap = el('label', 'picker', label + ' ');
    var s = el('select');
    s.id = id;
    D.configs.forEach(function (c, i) {
      var o = el('option', null, c + (i === D.baseline ? ' (baseline)' : ''));
      o.value = String(i);
      s.appendChild(o);
    });
    s.value = String(value);
    s.addEventListener('change', function () { onchange(Number(s.value)); render(); });
    wrap.appendChild(s);
    return wrap;
  }
  function measurePicker() {
    var wrap = el('label', 'picker', '\u0394 on ');
    var s = el('select');
    s.id = 'measure';
    D.measures.forEach(function (m, i) {
      var o = el('option', null, m);
      o.value = String(i);
      s.appendChild(o);
    });
    s.value = String(S.measure);
    s.addEventListener('change', function () { S.measure = Number(s.value); render(); });
    wrap.appendChild(s);
    return wrap;
  }
  function filterButton(key, label) {
    var b = el('button', 'filter', label);
    b.id = 'filter-' + key;
    b.type = 'button';
    b.setAttribute('aria-pressed', String(S.filters[key]));
    b.addEventListener('click', function () { S.filters[key] = !S.filters[key]; render(); });
    return b;
  }
  function toolbar() {
    var bar = el('div', 'toolbar');
    bar.appendChild(picker('left-config', 'left', S.left, function (v) { S.left = v; }));
    bar.appendChild(picker('right-config', 'right', S.right, function (v) { S.right = v; }));
    bar.appendChild(measurePicker());
    bar.appendChild(filterButton('changed', 'changed'));
    bar.appendChild(filterButton('worse', 'worse'));
    bar.appendChild(filterButton('better', 'better'));
    bar.appendChild(filterButton('unjudged', 'unjudged in top k'));
    bar.appendChild(el('span', 'keys', 'j / k or \u2193 / \u2191: next / previous task'));
    return bar;
  }

  function taskTable(rows) {
    var table = el('table', 'tasks');
    table.id = 'task-table';
    var head = el('tr');
    ['task', 'query', '1st rel. left', 'right'].forEach(function (h) { head.appendChild(el('th', null, h)); });
    var th = el('th');
    var sort = el('button', 'sort', '\u0394 ' + D.measures[S.measure] + (S.sort === 1 ? ' \u25b2' : S.sort === -1 ? ' \u25bc' : ''));
    sort.id = 'sort-delta';
    sort.type = 'button';
    sort.title = 'sort by \u0394: worst first, best first, report order';
    sort.addEventListener('click', function () { S.sort = S.sort === 0 ? 1 : S.sort === 1 ? -1 : 0; render(); });
    th.appendChild(sort);
    head.appendChild(th);
    head.appendChild(el('th', null, 'changed'));
    var thead = el('thead');
    thead.appendChild(head);
    table.appendChild(thead);
    var body = el('tbody');
    order().forEach(function (t) {
      var task = D.tasks[t], d = delta(t, S.measure);
      var tr = el('tr');
      tr.setAttribute('data-task', task.id);
      tr.hidden = rows.indexOf(t) < 0;
      if (t === S.current) { tr.className = 'current'; }
      var a = el('a', null, task.id);
      a.setAttribute('href', '#' + task.id);
      var td = el('td');
      td.appendChild(a);
      tr.appendChild(td);
      tr.appendChild(el('td', 'query', task.query || ''));
      tr.appendChild(el('td', 'num', rankLabel(side(S.left, t).first)));
      tr.appendChild(el('td', 'num', rankLabel(side(S.right, t).first)));
      tr.appendChild(el('td', 'num ' + (d > 0 ? 'up' : d < 0 ? 'down' : ''), signed(d)));
      tr.appendChild(el('td', null, changed(t) ? 'yes' : ''));
      tr.addEventListener('click', function () { select(t); });
      body.appendChild(tr);
    });
    table.appendChild(body);
    return table;
  }

  function snippetEl(pieces) {
    var p = el('div', 'snippet');
    (pieces || []).forEach(function (s, i) {
      p.appendChild(i % 2 === 1 ? el('mark', null, s) : document.createTextNode(s));
    });
    return p;
  }
  function mark(task, id) {
    if (!(id in task.judged)) { return ['unjudged', '?', 'unjudged']; }
    var g = task.judged[id];
    return g >= 1 ? ['rel', '\u2713', 'relevant (grade ' + g + ')'] : ['nonrel', '\u2717', 'judged not relevant'];
  }
  function movement(id, rank, other, isRight) {
    var at = other.indexOf(id);
    if (at < 0) { return isRight ? ['new', 'new'] : ['gone', '\u2192 out']; }
    var diff = at + 1 - rank;
    if (!isRight) { return ['to', '\u2192 ' + (at + 1)]; }
    if (diff > 0) { return ['up', '\u25b2' + diff]; }
    if (diff < 0) { return ['down', '\u25bc' + (-diff)]; }
    return ['same', '='];
  }
  function list(c, t, otherC, isRight) {
    var task = D.tasks[t], s = side(c, t);
    var other = topIds(otherC, t, 20);
    var col = el('section', 'side');
    col.appendChild(el('h3', null, (isRight ? 'right: ' : 'left: ') + D.configs[c]));
    col.appendChild(el('p', 'first', 'first relevant rank: ' + rankLabel(s.first)));
    var ol = el('ol', 'hits');
    ol.id = isRight ? 'list-right' : 'list-left';
    s.hits.forEach(function (h, i) {
      var id = h[0], info = D.docs[id] || { title: '' };
      var m = mark(task, id), mv = movement(id, i + 1, other, isRight);
      var li = el('li', 'hit ' + m[0]);
      li.setAttribute('data-doc', id);
      var top = el('div', 'line');
      top.appendChild(el('span', 'rank', String(i + 1)));
      var mk = el('span', 'mark', m[1]);
      mk.title = m[2];
      top.appendChild(mk);
      top.appendChild(el('span', 'move ' + mv[0], mv[1]));
      top.appendChild(el('span', 'title', info.title || id));
      top.appendChild(el('span', 'score', String(h[1])));
      li.appendChild(top);
      var meta = [id];
      if (info.lifecycle) { meta.push(info.lifecycle); }
      if (info.date) { meta.push(info.date); }
      li.appendChild(el('div', 'meta', meta.join(' \u00b7 ')));
      li.appendChild(snippetEl(task.snippets[id]));
      ol.appendChild(li);
      if (i + 1 === task.k) { ol.appendChild(el('li', 'cutoff', 'k = ' + task.k)); }
    });
    col.appendChild(ol);
    return col;
  }
  function detail(t) {
    var task = D.tasks[t];
    var box = el('section', 'detail');
    box.id = 'detail';
    box.appendChild(el('h2', null, task.id + (task.query ? ': ' + task.query : '')));
    var expected = Object.keys(task.judged).filter(function (d) { return task.judged[d] >= 1; });
    box.appendChild(el('p', null, 'k = ' + task.k + '; expected: ' + (expected.map(function (d) {
      return d + ' (' + task.judged[d] + ')';
    }).join(', ') || 'none')));
    var dt = el('table', 'deltas');
    var hr = el('tr');
    hr.appendChild(el('th', null, ''));
    D.measures.forEach(function (m) { hr.appendChild(el('th', null, m)); });
    dt.appendChild(hr);
    [[D.configs[S.left], S.left], [D.configs[S.right], S.right]].forEach(function (row) {
      var tr = el('tr');
      tr.appendChild(el('th', null, row[0]));
      side(row[1], t).values.forEach(function (v) { tr.appendChild(el('td', 'num', fmt(v))); });
      dt.appendChild(tr);
    });
    var tr = el('tr');
    tr.appendChild(el('th', null, '\u0394'));
    D.measures.forEach(function (_, m) {
      var d = delta(t, m);
      tr.appendChild(el('td', 'num ' + (d > 0 ? 'up' : d < 0 ? 'down' : ''), signed(d)));
    });
    dt.appendChild(tr);
    box.appendChild(dt);
    var sides = el('div', 'sides');
    sides.appendChild(list(S.left, t, S.right, false));
    sides.appendChild(list(S.right, t, S.left, true));
    box.appendChild(sides);
    return box;
  }
  function rowsShown() { return order().filter(visible); }
  function render() {
    var rows = rowsShown();
    while (app.firstChild) { app.removeChild(app.firstChild); }
    app.appendChild(toolbar());
    app.appendChild(el('p', 'count', rows.length + ' of ' + D.tasks.length + ' tasks shown'));
    var layout = el('div', 'layout');
    layout.appendChild(taskTable(rows));
    layout.appendChild(detail(S.current));
    app.appendChild(layout);
  }
  function select(t) {
    S.current = t;
    if (location.hash !== '#' + D.tasks[t].id) { history.replaceState(null, '', '#' + D.tasks[t].id); }
    render();
  }
  function fromHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    if (id in byId && byId[id] !== S.current) { S.current = byId[id]; render(); }
  }
  document.addEventListener('keydown', function (e) {
    var tag = e.target && e.target.tagName;
    if (tag === 'SELECT' || tag === 'INPUT' || tag === 'TEXTAREA' || e.ctrlKey || e.metaKey || e.altKey) { return; }
    var step = (e.key === 'j' || e.key === 'ArrowDown') ? 1 : (e.key === 'k' || e.key === 'ArrowUp') ? -1 : 0;
    if (!step) { return; }
    var rows = rowsShown();
    if (!rows.length) { return; }
    var at = rows.indexOf(S.current);
    var next = at < 0 ? rows[0] : rows[Math.min(rows.length - 1, Math.max(0, at + step))];
    e.preventDefault();
    select(next);
  });
  window.addEventListener('hashchange', fromHash);
  document.getElementById('static-tasks').hidden = true;
  app.hidden = false;
  var start = decodeURIComponent(location.hash.slice(1));
  if (start in byId) { S.current = byId[start]; }
  render();
}());
