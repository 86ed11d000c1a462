'use strict';
// rtreport's partial bundle of plotly.js: its core (which holds the scatter trace) and the bar trace, the only
// trace types the site draws. plotly.js's basic bundle adds the pie trace and the calendars component (world
// calendars' tables), which cost about 40 % of the basic bundle's first run (docs/page-speed.md).
//
// Two changes to how plotly.js runs, both for a phone reader's total blocking time:
//
// 1. Running the bundle in stages. esbuild wraps each CommonJS module so that it runs on its first require; the
//    bundle itself only defines them, and `PlotlyBoot.step()` (the bundle's global) requires the next group of
//    modules, heaviest apart, and returns true once `window.Plotly` is ready. rtreport.js calls it once per task,
//    so running plotly.js is 11 tasks of 0-77 ms at 4x CPU slowdown instead of one of 220-340 ms (measured in
//    Chromium on an idle 2-core machine: docs/page-speed.md).
// 2. A chart's draw gives the page back between its steps. plotly.js runs a draw's steps (plot_api's `_doPlot`: the
//    framework, margins, axes, data, the final touches, interactions) through `Lib.syncOrAsync`, which already
//    waits wherever a step returns a promise. For the graph div named in `Plotly.yieldingFor` (rtreport.js sets it
//    around its own `newPlot`, with `Plotly.yieldingSince`, the time it called it), the outermost sequence also
//    yields between two steps once the task has run for `Plotly.yieldAfterMs` (30 ms; 0: after every step, as the
//    tests use it): the first task ends after the draw's set-up (plotly.js's defaults and data, before its
//    steps). Nested sequences always run through.
var Plotly = null;

function yieldingSteps() {
    var Lib = require('plotly.js/src/lib');
    var depth = 0;
    function later() { return new Promise(function (resolve) { setTimeout(resolve, 0); }); }
    Lib.syncOrAsync = function syncOrAsync(sequence, arg, finalStep) {
        var outer = depth === 0 && arg && arg === Plotly.yieldingFor;
        var start = (outer && Plotly.yieldingSince) || Date.now();   // the draw's first task began before its steps
        if (outer) Plotly.yieldingSince = 0;
        function continueAsync() { return Lib.syncOrAsync(sequence, arg, finalStep); }
        while (sequence.length) {
            var fn = sequence.splice(0, 1)[0];
            var ret;
            depth++;
            try { ret = fn(arg); } finally { depth--; }
            if (ret && ret.then) return ret.then(continueAsync);
            if (outer && sequence.length && Date.now() - start >= Plotly.yieldAfterMs) return later().then(continueAsync);
        }
        return finalStep && finalStep(arg);
    };
}

var STAGES = [
    function () { require('@plotly/d3'); },
    function () { require('plotly.js/src/lib'); },
    function () { require('plotly.js/src/registry'); require('plotly.js/src/components/drawing'); },
    function () { require('plotly.js/src/plots/plots'); },
    function () { require('plotly.js/src/plots/cartesian/axes'); },
    function () { require('plotly.js/src/plots/cartesian'); },
    function () { require('plotly.js/src/plot_api'); },
    function () { require('plotly.js/src/components/fx'); require('plotly.js/src/components/legend'); },
    function () { require('plotly.js/src/components/annotations'); require('plotly.js/src/components/shapes'); },
    function () { Plotly = require('plotly.js/lib/core'); },
    function () {
        Plotly.register([require('plotly.js/lib/bar')]);
        Plotly.yieldingFor = null;
        Plotly.yieldingSince = 0;
        Plotly.yieldAfterMs = 30;
        yieldingSteps();
        window.Plotly = Plotly;
    },
];
var next = 0;
exports.step = function step() {
    if (next < STAGES.length) STAGES[next++]();
    return next >= STAGES.length;
};
