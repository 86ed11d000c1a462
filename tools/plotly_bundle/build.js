// node build.js -> ../../site_gen/assets/plotly-rtreport-<version>.min.js (run `npm ci` here first)
const esbuild = require('esbuild');
const path = require('path');
const version = require('plotly.js/package.json').version;
const out = path.join(__dirname, '..', '..', 'site_gen', 'assets', `plotly-rtreport-${version}.min.js`);
esbuild.build({
  entryPoints: [path.join(__dirname, 'entry.js')], outfile: out, format: 'iife', globalName: 'PlotlyBoot',
  bundle: true, minify: true, target: 'es2016', legalComments: 'none', logLevel: 'warning',
  // as plotly.js's own esbuild-config.js defines them
  // registry.js imports maplibre's stylesheet for map subplots, which the site never draws
  loader: {'.css': 'empty'},
  define: {global: 'window', 'define.amd': 'false', 'process.env.NODE_DEBUG': 'false'},
  banner: {js: `/* plotly.js v${version} (MIT, see plotly-LICENSE.txt): core and bar only, built by tools/plotly_bundle */`},
}).then(() => console.log('wrote ' + out));
