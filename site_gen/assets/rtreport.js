// Draws every chart from the JSON spec the page carries (nothing is fetched but the plotly.js bundle itself).
// No chart in the viewport waits for the reader's input: it draws as the page opens. Charts further down draw as
// they come within a screen of the viewport (IntersectionObserver) once the reader has scrolled, and once the page
// has stopped scrolling for a moment (SETTLE_MS): nearest to the viewport first, one chart per task, each when the
// main thread is idle (requestIdleCallback). plotly.js itself runs in stages, a task each, and its draw gives the
// page back between its steps (tools/plotly_bundle/entry.js), so a reader flicking past charts does not wait for
// them and the page keeps scrolling smoothly, while the charts where the reader stops draw at once; a page whose
// first screen has no chart runs no plotly.js until the reader scrolls (docs/page-speed.md has the figures). The
// bundle is fetched, not run, as soon as a chart comes near. Charts in folded sections (<details>) count only once
// their section is open. The data table under each chart stays open for readers without JavaScript and folds once
// charts can draw; a box whose chart is waiting says so (the words come from the page).
(function () {
  var SETTLE_MS = 200;
  var me = document.currentScript;
  var bundle = me.getAttribute("data-plotly"), locale = me.getAttribute("data-locale");
  var localeName = me.getAttribute("data-locale-name"), loading = null, fetched = false;
  var near = [], busy = false, lastScroll = -Infinity, scrolled = false;

  function load(src) {
    return new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = src; s.onload = resolve; s.onerror = reject;
      document.head.appendChild(s);
    });
  }
  function prefetch() {   // download only; running the bundle waits for the first chart to draw
    if (fetched) return;
    fetched = true;
    [bundle, locale].forEach(function (src) {
      if (!src) return;
      var l = document.createElement("link");
      l.rel = "prefetch"; l.as = "script"; l.href = src;
      document.head.appendChild(l);
    });
  }
  function boot() {   // plotly.js's modules run a stage per task (PlotlyBoot: tools/plotly_bundle/entry.js)
    return new Promise(function (resolve) {
      (function stage() {
        if (window.Plotly || !window.PlotlyBoot || window.PlotlyBoot.step()) resolve(); else setTimeout(stage, 0);
      })();
    });
  }
  function plotly() {
    if (!loading) loading = load(bundle).then(boot).then(function () { return locale ? load(locale) : null; });
    return loading;
  }
  function idle(fn) {   // a task of its own, once the page has nothing more urgent to do
    if (window.requestIdleCallback) requestIdleCallback(fn, { timeout: 1000 }); else setTimeout(fn, 0);
  }
  function distance(el) {
    var r = el.getBoundingClientRect();
    return r.bottom < 0 ? -r.bottom : Math.max(0, r.top - innerHeight);
  }
  function inView(el) { return distance(el) === 0; }
  function pump() {
    var ready = near.filter(function (el) { return scrolled || inView(el); });
    if (!ready.length) { busy = false; return; }   // until the reader scrolls
    var wait = lastScroll + SETTLE_MS - performance.now();
    if (wait > 0) { setTimeout(pump, wait); return; }
    if (!window.Plotly) { plotly().then(function () { idle(pump); }, function () { busy = false; }); return; }
    ready.sort(function (a, b) { return distance(a) - distance(b); });
    near.splice(near.indexOf(ready[0]), 1);
    draw(ready[0]);
  }
  function draw(el) {
    el.dataset.drawn = "1";
    observer && observer.unobserve(el);
    var spec = JSON.parse(document.getElementById(el.dataset.spec).textContent);
    // margins are fixed when the site is built, for a phone; a wider screen fits a legend in fewer rows
    if (spec.wide && el.clientWidth >= 600) spec.layout.margin = Object.assign({}, spec.layout.margin, spec.wide.margin);
    var config = { responsive: true, displayModeBar: false };
    if (localeName) config.locale = localeName;
    Plotly.yieldingFor = el;   // the bundle's draw gives the page back between its steps (tools/plotly_bundle)
    Plotly.yieldingSince = Date.now();
    Plotly.newPlot(el, spec.data, spec.layout, config).then(function () {
      Plotly.yieldingFor = null;
      el.style.minHeight = "";
      el.removeAttribute("data-waiting");
    }, function () { Plotly.yieldingFor = null; el.removeAttribute("data-waiting"); }).then(function () { idle(pump); });
  }
  function wanted(el, yes) {   // a chart comes near (yes) or goes away again before it was drawn
    var i = near.indexOf(el);
    if (yes && i < 0) {
      near.push(el);
      el.setAttribute("data-waiting", el.getAttribute("data-wait-text") || "");
    } else if (!yes && i >= 0) {
      near.splice(i, 1);
    }
    if (!near.length) return;
    prefetch();
    kick();
  }
  function kick() { if (!busy && near.length) { busy = true; idle(pump); } }
  var observer = null;
  function start() {
    var charts = document.querySelectorAll(".chart[data-spec]");
    document.querySelectorAll("details.data[open]").forEach(function (d) { d.removeAttribute("open"); });
    if (!("IntersectionObserver" in window)) {   // no way to tell what is near: draw them all, one by one
      scrolled = true;
      charts.forEach(function (el) { wanted(el, true); });
      return;
    }
    addEventListener("scroll", function () { lastScroll = performance.now(); scrolled = true; kick(); }, { passive: true });
    observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) { if (!e.target.dataset.drawn) wanted(e.target, e.isIntersecting); });
    }, { rootMargin: "100% 0px" });   // a screen ahead, up and down
    charts.forEach(function (el) { observer.observe(el); });
  }
  // A link to a part of the page that is folded (a machine page's sections are <details>) opens it first.
  function reveal() {
    var target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
    for (var d = target && target.closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) d.open = true;
  }
  window.addEventListener("hashchange", reveal);
  document.addEventListener("DOMContentLoaded", reveal);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
