// One Lighthouse measurement of one page of the built site, printed as one JSON line.
//   node lighthouse_flow.mjs URL navigation|timespan mobile|desktop [--open-parts] [--pause MS] [--report FILE.html]
// navigation: Lighthouse's navigation run (its default config, or its desktop config), simulated throttling.
// timespan: a navigation to load the page, then a timespan (devtools throttling: 4x CPU on mobile) in which the
// reader scrolls to the bottom with the mouse wheel, one step of 80 % of a screen every 250 ms (--pause: every MS
// ms, a reader who stops on each screen), and waits 3 s;
// with --open-parts the reader first opens every folded section (<details class="part">), so that every chart lies
// on the way down. Chromium: CHROME_PATH (default /usr/bin/chromium).
import fs from 'node:fs';
import puppeteer from 'puppeteer-core';
import {startFlow, desktopConfig} from 'lighthouse';

const [url, mode, form, ...rest] = process.argv.slice(2);
if (!url || !['navigation', 'timespan'].includes(mode) || !['mobile', 'desktop'].includes(form)) {
  console.error('usage: node lighthouse_flow.mjs URL navigation|timespan mobile|desktop [--open-parts] [--report FILE]');
  process.exit(2);
}
const openParts = rest.includes('--open-parts');
const pause = rest.includes('--pause') ? Number(rest[rest.indexOf('--pause') + 1]) : 250;
const report = rest.includes('--report') ? rest[rest.indexOf('--report') + 1] : null;
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

const browser = await puppeteer.launch({
  executablePath: process.env.CHROME_PATH || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage();
  const config = form === 'desktop' ? desktopConfig : undefined;
  const flow = await startFlow(page, {config, name: `${mode} ${form} ${url}`});
  await flow.navigate(url);
  if (mode === 'timespan') {
    await sleep(1000);
    await flow.startTimespan();
    if (openParts) {
      await page.evaluate(() => document.querySelectorAll('details.part').forEach(d => { d.open = true; }));
    }
    const box = await page.evaluate(() => [innerWidth, innerHeight]);
    await page.mouse.move(box[0] / 2, box[1] / 2);
    for (let step = 0; step < 400; step++) {
      const atBottom = await page.evaluate(() => scrollY + innerHeight >= document.documentElement.scrollHeight - 2);
      if (atBottom) break;
      await page.mouse.wheel({deltaY: Math.round(box[1] * 0.8)});
      await sleep(pause);
    }
    await sleep(3000);
    await flow.endTimespan();
  }
  const result = await flow.createFlowResult();
  const step = result.steps[result.steps.length - 1].lhr;
  const audit = id => step.audits[id] && step.audits[id].numericValue;
  const charts = await page.evaluate(() => [document.querySelectorAll('.chart[data-spec]').length,
                                            document.querySelectorAll('.chart.js-plotly-plot').length]);
  console.log(JSON.stringify({
    url, mode, form, openParts, pause: mode === 'timespan' ? pause : null,
    performance: step.categories.performance.score === null ? null : Math.round(step.categories.performance.score * 100),
    tbt_ms: audit('total-blocking-time'),
    fcp_ms: audit('first-contentful-paint'), lcp_ms: audit('largest-contentful-paint'),
    cls: audit('cumulative-layout-shift'), inp_ms: audit('interaction-to-next-paint') ?? null,
    long_tasks: (step.audits['long-tasks'] && step.audits['long-tasks'].details
      ? step.audits['long-tasks'].details.items.map(t => [t.url.split('/').pop(), Math.round(t.startTime), Math.round(t.duration)]) : []),
    charts_on_page: charts[0], charts_drawn: charts[1],
    benchmark_index: step.environment && step.environment.benchmarkIndex,
    lighthouse: step.lighthouseVersion, chrome: await browser.version(),
  }));
  if (report) fs.writeFileSync(report, await flow.generateReport());
} finally {
  await browser.close();
}
