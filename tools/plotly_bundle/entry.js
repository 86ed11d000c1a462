'use strict';
// rtreport's partial bundle of plotly.js: its core (which holds the scatter trace) and the bar trace, the only
// trace types the site draws. plotly.js's basic bundle adds the pie trace and the calendars component (world
// calendars' tables), which cost about 40 % of the basic bundle's first run (docs/page-speed.md).
var Plotly = require('plotly.js/lib/core');
Plotly.register([require('plotly.js/lib/bar')]);

// A chart's first draw is a sequence of steps (plot_api's `_doPlot`: the framework, margins, axes, data, the
// final touches, interactions) that plotly.js runs through `Lib.syncOrAsync`, which already waits wherever a step
// returns a promise. For a graph div named in `Plotly.yieldingFor` (rtreport.js sets it around its own
// `newPlot`), the outermost sequence also gives the page back between two steps once the task has run for
// `Plotly.yieldAfterMs`, so that one chart's draw is several short tasks instead of one long one (issue #28: total
// blocking time while a reader scrolls on a phone). Nested sequences (a step's own) always run through.
// `Plotly.yieldAfterMs` sets the budget (0: give the page back after every step; the tests use it).
var Lib = require('plotly.js/src/lib');
Plotly.yieldAfterMs = 30;
var depth = 0;
function later() { return new Promise(function (resolve) { setTimeout(resolve, 0); }); }
Lib.syncOrAsync = function syncOrAsync(sequence, arg, finalStep) {
    var outer = depth === 0 && arg && arg === Plotly.yieldingFor;
    var start = Date.now();
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
module.exports = Plotly;
