'use strict';
// rtreport's partial bundle of plotly.js: its core (which holds the scatter trace) and the bar trace, the only
// trace types the site draws. plotly.js's basic bundle adds the pie trace and the calendars component (world
// calendars' tables), which cost about 40 % of the basic bundle's first run (docs/page-speed.md).
var Plotly = require('plotly.js/lib/core');
Plotly.register([require('plotly.js/lib/bar')]);
module.exports = Plotly;
