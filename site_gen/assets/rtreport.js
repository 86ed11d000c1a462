// Draws every chart from the JSON spec the page carries (nothing is fetched but the plotly.js bundle itself).
// The bundle loads only when a chart comes near the screen, so a page whose charts are further down is light;
// the data table under each chart stays open for readers without JavaScript and folds once charts can draw.
(function () {
  var me = document.currentScript;
  var bundle = me.getAttribute("data-plotly"), locale = me.getAttribute("data-locale");
  var localeName = me.getAttribute("data-locale-name"), loading = null;

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
  function draw(el) {
    if (el.dataset.drawn) return;
    el.dataset.drawn = "1";
    el.removeAttribute("data-waiting");
    plotly().then(function () {
      var spec = JSON.parse(document.getElementById(el.dataset.spec).textContent);
      var config = { responsive: true, displayModeBar: false };
      if (localeName) config.locale = localeName;
      el.style.minHeight = "";
      return Plotly.newPlot(el, spec.data, spec.layout, config);
    });
  }
  // A chart already on the first screen waits for the reader's first input (a touch, a key, the pointer, a
  // scroll): evaluating the Plotly bundle takes about half a second of a phone's main thread, and the words
  // above the chart should be readable and the page responsive before that. Charts further down draw as they
  // come near. A waiting chart says so in its box (the words come from the page, in its language).
  var engaged = false, waiting = [];
  var inputs = ["pointerdown", "pointermove", "keydown", "wheel", "touchstart", "scroll"];
  function engage() {
    if (engaged) return;
    engaged = true;
    inputs.forEach(function (name) { window.removeEventListener(name, engage, true); });
    waiting.splice(0).forEach(draw);
  }
  function start() {
    var charts = document.querySelectorAll(".chart[data-spec]");
    document.querySelectorAll("details.data[open]").forEach(function (d) { d.removeAttribute("open"); });
    if (!("IntersectionObserver" in window)) { charts.forEach(draw); return; }
    inputs.forEach(function (name) { window.addEventListener(name, engage, { capture: true, passive: true }); });
    var seen = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (!e.isIntersecting) return;
        seen.unobserve(e.target);
        if (engaged) { draw(e.target); return; }
        e.target.setAttribute("data-waiting", e.target.getAttribute("data-wait-text") || "");
        waiting.push(e.target);
      });
    }, { rootMargin: "100px 0px" });
    charts.forEach(function (el) { seen.observe(el); });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
