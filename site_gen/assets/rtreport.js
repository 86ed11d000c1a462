// Draws every chart from the JSON spec the page carries (nothing is fetched but the plotly.js bundle itself).
// No chart waits for the reader: the bundle loads as soon as a chart is on the screen or near it, and each chart
// draws when it comes within a screen of the viewport (IntersectionObserver), one chart per task, so that drawing
// many charts never blocks the page in one long task. A page whose charts are all further down loads no bundle
// until the reader scrolls towards them; a chart in a folded section (<details>) draws once the reader opens it and
// it comes near. The data table under each chart stays open for readers without JavaScript and folds once charts
// can draw; a box whose chart is loading says so (the words come from the page).
(function () {
  var me = document.currentScript;
  var bundle = me.getAttribute("data-plotly"), locale = me.getAttribute("data-locale");
  var localeName = me.getAttribute("data-locale-name"), loading = null, queue = [], busy = false;

  function load(src) {
    return new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = src; s.onload = resolve; s.onerror = reject;
      document.head.appendChild(s);
    });
  }
  function plotly() {
    if (!loading) loading = load(bundle).then(function () { return locale ? load(locale) : null; });
    return loading;
  }
  function later(fn) { setTimeout(fn, 0); }   // a task of its own: the page stays responsive between charts
  function drawNext() {
    var el = queue.shift();
    if (!el) { busy = false; return; }
    var spec = JSON.parse(document.getElementById(el.dataset.spec).textContent);
    var config = { responsive: true, displayModeBar: false };
    if (localeName) config.locale = localeName;
    Plotly.newPlot(el, spec.data, spec.layout, config).then(function () {
      el.style.minHeight = "";
      el.removeAttribute("data-waiting");
    }, function () { el.removeAttribute("data-waiting"); }).then(function () { later(drawNext); });
  }
  function draw(el) {
    if (el.dataset.drawn) return;
    el.dataset.drawn = "1";
    el.setAttribute("data-waiting", el.getAttribute("data-wait-text") || "");
    queue.push(el);
    plotly().then(function () {
      if (busy) return;
      busy = true;
      later(drawNext);
    });
  }
  function start() {
    var charts = document.querySelectorAll(".chart[data-spec]");
    document.querySelectorAll("details.data[open]").forEach(function (d) { d.removeAttribute("open"); });
    if (!("IntersectionObserver" in window)) { charts.forEach(draw); return; }
    var near = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (!e.isIntersecting) return;
        near.unobserve(e.target);
        draw(e.target);
      });
    }, { rootMargin: "100% 0px" });   // a screen ahead, up and down
    charts.forEach(function (el) { near.observe(el); });
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
