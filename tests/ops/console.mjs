// Opens the operations console in headless Chromium, creates a cluster through the ARM API and
// watches it appear and reach Succeeded without reloading the page. Fails on any console error or
// uncaught exception in the page. Screenshots go to $SHOTS.
// Environment: CHROMIUM, ARM, CONSOLE (the console link with its token), SUB, SHOTS, PROFILE_DIR, HCPCTL.
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import puppeteer from "puppeteer-core";

const { CHROMIUM, ARM, CONSOLE, SUB, SHOTS, PROFILE_DIR, HCPCTL } = process.env;
const errors = [];
let passed = 0, failed = 0;

// The cluster is created by hcpctl, an ARM client, with the body it sends by default.
function createCluster(name) {
  execFileSync(HCPCTL, ["--endpoint", ARM, "-s", SUB, "-g", "console", "cluster", "create", name, "--no-wait"],
               { stdio: ["ignore", "pipe", "pipe"], timeout: 60000 });
}

async function main() {
  fs.mkdirSync(SHOTS, { recursive: true });
  fs.mkdirSync(PROFILE_DIR, { recursive: true });
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           `--user-data-dir=${PROFILE_DIR}`],
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1366, height: 800 });
    page.on("console", (m) => { if (m.type() === "error") errors.push(`console: ${m.text()}`); });
    page.on("pageerror", (e) => errors.push(`page: ${e.message}`));
    page.on("requestfailed", (r) => {
      // The event stream ends each answer and reconnects: an aborted stream read is not a failure.
      if (!r.url().includes("/admin/console/events")) errors.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
    });
    await page.goto(CONSOLE, { waitUntil: "networkidle2" });
    await page.waitForFunction(() => document.getElementById("live").textContent === "live", { timeout: 20000 });
    await page.screenshot({ path: path.join(SHOTS, "1-empty.png") });

    // Create through ARM while the page is open; never reload it.
    const navigations = [];
    page.on("framenavigated", (f) => { if (f === page.mainFrame()) navigations.push(f.url()); });
    createCluster("console-demo");
    await page.waitForFunction(() => [...document.querySelectorAll("#rows tr")].some((tr) => tr.textContent.includes("console-demo")), { timeout: 20000 });
    const first = await page.$eval("#rows", (t) => t.textContent);
    await page.screenshot({ path: path.join(SHOTS, "2-appeared.png") });
    await page.waitForFunction(() => [...document.querySelectorAll("#rows tr")].some((tr) => tr.textContent.includes("console-demo") && tr.textContent.includes("Succeeded")), { timeout: 120000 });
    // Keyboard: focus the search, type, open the row with Enter and see its operation's timeline.
    await page.keyboard.press("/");
    await page.keyboard.type("console-demo");
    await page.keyboard.press("Enter");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => !document.getElementById("detail").hidden && document.getElementById("detail").textContent.includes("console-demo"), { timeout: 10000 });
    await page.screenshot({ path: path.join(SHOTS, "3-succeeded.png") });
    if (navigations.length) throw new Error(`the page navigated: ${navigations}`);
    if (!/Accepted|Provisioning|Succeeded/.test(first)) throw new Error(`first state not shown: ${first}`);
    if (errors.length) throw new Error(errors.join("\n"));
    passed++;
  } catch (e) {
    console.log(`FAIL: ${e.stack || e}`);
    failed++;
  } finally {
    await browser.close();
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => { console.log(`FAIL: ${e.stack || e}`); console.log("0 passed, 1 failed"); process.exit(1); });
