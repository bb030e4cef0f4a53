// History charts: uPlot over the series the server embedded as JSON (times in unix seconds;
// uPlot draws them in the reader's time zone).
(function () {
  "use strict";
  var COLOURS = ["#3d6fb5", "#c77d00", "#1d6b35", "#7d4cb5", "#a3161b", "#2b7a7a", "#5a6470", "#b3527a"];
  function draw() {
    var data = JSON.parse(document.getElementById("chart-data").textContent);
    document.querySelectorAll("[data-chart]").forEach(function (el) {
      var c = data[el.getAttribute("data-chart")];
      var names = Object.keys(c.lines);
      if (!c.x.length || !names.length) {
        el.textContent = "Nothing to draw yet.";
        el.classList.add("muted");
        return;
      }
      var series = [{}].concat(names.map(function (n, i) {
        return {label: n, stroke: COLOURS[i % COLOURS.length], width: 2, spanGaps: false,
                points: {show: c.x.length < 60}};
      }));
      var cols = [c.x].concat(names.map(function (n) { return c.lines[n]; }));
      // one instant alone would make uPlot stretch the time axis over years: show an hour round it
      var lo = c.x[0], hi = c.x[c.x.length - 1];
      var scales = hi - lo < 60 ? {x: {time: true, range: [lo - 1800, hi + 1800]}} : {};
      new uPlot({width: Math.max(300, el.clientWidth), height: 220, series: series, scales: scales,
                 axes: [{}, {size: 50}]}, cols, el);
    });
  }
  document.addEventListener("DOMContentLoaded", draw);
})();
