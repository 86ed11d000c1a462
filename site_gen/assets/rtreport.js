// Draws every chart on the page from its JSON spec (no data is fetched: the page carries it).
(function () {
  function draw() {
    document.querySelectorAll(".chart[data-spec]").forEach(function (el) {
      var spec = JSON.parse(document.getElementById(el.dataset.spec).textContent);
      Plotly.newPlot(el, spec.data, spec.layout, { responsive: true, displaylogo: false });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", draw); else draw();
})();
