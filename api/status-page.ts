/**
 * The live status page: one HTML document with a little JS that polls GET /stats every second
 * and redraws. No build step and no external assets (it must work on a cluster with no
 * internet). URLs, hosts and reasons come from the crawled web, so they are only ever set as
 * textContent, never as HTML.
 */
export function statusPageHtml(title: string): string {
  const safeTitle = title.replace(/[<>&"]/g, '');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${safeTitle} status</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1b1f24;background:#f6f7f9}
h1{font-size:1.3em;margin:0 0 .6em}h2{font-size:1em;margin:1.2em 0 .4em}
.cards{display:flex;gap:1em;flex-wrap:wrap}.card{background:#fff;border:1px solid #d6dae0;border-radius:6px;padding:.6em 1em;min-width:9em}
.card b{display:block;font-size:1.6em}.muted{color:#69707a}
table{border-collapse:collapse;background:#fff;width:100%;max-width:70em}td,th{border-bottom:1px solid #e3e6ea;padding:.25em .6em;text-align:left;font-variant-numeric:tabular-nums}
td.url{max-width:40em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
svg{background:#fff;border:1px solid #d6dae0;border-radius:6px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(28em,1fr));gap:1em}
#state.err{color:#b42318}
#registry-alarm{display:none;background:#fef3f2;border:1px solid #b42318;color:#b42318;border-radius:6px;padding:.5em 1em;margin:0 0 1em}
body[data-registry-alarm="1"] #registry-alarm{display:block}
</style></head>
<body data-live="0">
<h1>${safeTitle} — crawl status <span id="state" class="muted">connecting…</span></h1>
<div id="registry-alarm" role="alert"></div>
<div class="cards">
  <div class="card">pages/s<b id="pages-rate">–</b></div>
  <div class="card">pages fetched<b id="pages-total">–</b></div>
  <div class="card">URLs known<b id="urls-total">–</b></div>
  <div class="card">hosts in rotation<b id="hosts-rotation">–</b></div>
  <div class="card">oldest due URL waits<b id="oldest-due">–</b></div>
  <div class="card">blocked hosts<b id="blocks-total">–</b></div>
  <div class="card">opt-out registry<b id="registry-version">–</b></div>
</div>
<h2>Pages per second, last 5 minutes</h2>
<svg id="rate-chart" width="900" height="160" viewBox="0 0 900 160" role="img" aria-label="pages per second over time"><polyline id="rate-line" fill="none" stroke="#2563eb" stroke-width="2" points=""/><text id="rate-max" x="6" y="14" font-size="11" fill="#69707a"></text></svg>
<div class="grid">
<div><h2>Queues</h2><table><tbody id="queues"></tbody></table></div>
<div><h2>Top hosts</h2><table><thead><tr><th>host</th><th>fetched</th><th>errors</th><th>incidents</th></tr></thead><tbody id="top-hosts"></tbody></table></div>
<div><h2>Politeness incidents</h2><table><tbody id="politeness"></tbody></table></div>
<div><h2>Recent errors</h2><table><tbody id="errors"></tbody></table></div>
<div><h2>Blocks in force</h2><table><tbody id="blocks"></tbody></table></div>
<div><h2>Responses</h2><table><tbody id="statuses"></tbody></table></div>
<div><h2>Opt-out registry version applied</h2><table><thead><tr><th>process</th><th>instance</th><th>version</th><th>behind</th><th>reported</th></tr></thead><tbody id="registry"></tbody></table></div>
</div>
<script>
(function () {
  function $(id) { return document.getElementById(id); }
  function text(id, v) { $(id).textContent = v; }
  function rows(id, list, cells) {
    var body = $(id); body.textContent = '';
    if (!list.length) { var tr0 = body.insertRow(); var td0 = tr0.insertCell(); td0.textContent = 'none'; td0.className = 'muted'; return; }
    list.forEach(function (item) {
      var tr = body.insertRow();
      cells(item).forEach(function (c) { var td = tr.insertCell(); td.textContent = c === null || c === undefined ? '' : String(c); if (String(c).indexOf('://') > 0) td.className = 'url'; });
    });
  }
  function time(ms) { return new Date(ms).toLocaleTimeString(); }
  function draw(timeline) {
    var max = 1; timeline.forEach(function (p) { if (p.pages > max) max = p.pages; });
    var w = 900, h = 160, n = Math.max(1, timeline.length - 1);
    $('rate-line').setAttribute('points', timeline.map(function (p, i) { return (i * w / n).toFixed(1) + ',' + (h - 4 - (p.pages / max) * (h - 24)).toFixed(1); }).join(' '));
    text('rate-max', 'max ' + max + '/s');
  }
  function render(s) {
    text('pages-rate', s.pages_per_second.toFixed(1));
    text('pages-total', s.pages_total);
    text('urls-total', s.queues.urls);
    text('hosts-rotation', s.queues.hosts_in_rotation);
    text('oldest-due', s.queues.oldest_due_age_s === null ? 'none due' : s.queues.oldest_due_age_s.toFixed(0) + ' s');
    text('blocks-total', s.blocks.length);
    draw(s.timeline);
    var q = Object.keys(s.queues.by_state).map(function (k) { return ['URLs ' + k.toLowerCase(), s.queues.by_state[k]]; });
    Object.keys(s.queues.lag).forEach(function (k) { q.push(['waiting in ' + k, s.queues.lag[k]]); });
    rows('queues', q, function (r) { return r; });
    rows('top-hosts', s.top_hosts, function (h) { return [h.host, h.fetched, h.errors, h.incidents]; });
    rows('politeness', s.politeness.slice(0, 15), function (i) { return [time(i.at), i.host, i.kind, i.detail]; });
    rows('errors', s.errors.slice(0, 15), function (i) { return [time(i.at), i.kind, i.url, i.detail]; });
    rows('blocks', s.blocks, function (b) { return [b.host, 'until ' + new Date(b.until).toISOString(), b.reason]; });
    rows('statuses', Object.keys(s.http_status).map(function (k) { return ['HTTP ' + k, s.http_status[k]]; }), function (r) { return r; });
    var reg = s.optout_registry;
    text('registry-version', 'v' + reg.version);
    rows('registry', reg.processes, function (p) {
      return [p.stage, p.instance, 'v' + p.applied_version, p.silent ? 'silent' : p.behind_s + ' s' + (p.alarm ? ' (alarm)' : ''), time(p.reported_at)];
    });
    var late = reg.processes.filter(function (p) { return p.alarm; });
    text('registry-alarm', late.length ? 'Opt-out registry alarm: ' + late.map(function (p) { return p.stage + ' ' + p.instance + ' is ' + p.behind_s + ' s behind (v' + p.applied_version + ' of v' + reg.version + ')'; }).join('; ') + ' (more than ' + reg.alarm_after_s + ' s)' : '');
    document.body.setAttribute('data-registry-alarm', reg.alarm ? '1' : '0');
    text('state', 'updated ' + time(s.now)); $('state').className = 'muted';
    document.body.setAttribute('data-live', '1');
  }
  function poll() {
    fetch('stats', { cache: 'no-store' })
      .then(function (r) { if (!r.ok) throw new Error('HTTP ' + r.status); return r.json(); })
      .then(render)
      .catch(function (e) { text('state', 'cannot reach the crawl: ' + e.message); $('state').className = 'err'; })
      .then(function () { setTimeout(poll, 1000); });
  }
  poll();
})();
</script>
</body></html>
`;
}
