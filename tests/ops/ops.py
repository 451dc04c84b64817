#!/usr/bin/env python3
"""Operator-facing end-to-end tests.

- metrics_scrape: each process (serve; clusters-service, frontend and backend as separate processes on
  one store) exposes /metrics on its admin listener; promtool (Debian's prometheus package) parses the
  whole exposition; the families of the parts the process runs are there, and no label carries an ID.
- admin_api: the admin API over HTTP with the token written to the data dir, refused without it.
- console_browser: headless Chromium (puppeteer-core from npm, tests/ops/console.mjs) opens the console,
  a cluster is created through the ARM API and seen to appear and reach Succeeded without a reload;
  screenshots go to the test's output folder (HCPRP_OPS_ARTIFACTS, else the temporary directory).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import e2e  # noqa: E402
from e2e import expect, expect_eq, run_tests, url_after, wait_until  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SUB = "a1b2c3d4-0000-4000-8000-00000000ab01"


def http(method, url, body=None, headers=None):
    """One request; the ARM endpoint is HTTPS with ARM's client certificate (e2e.http_request)."""
    r = e2e.http_request(method, url, body, headers)
    return r.status, r.raw, {k.title(): v for k, v in r.headers.items()}


def admin_lines(proc):
    """The metrics URL a process prints after its first line."""
    return proc.wait_line(url_after("metrics:"))


def promtool_check(text, what):
    promtool = shutil.which("promtool")
    expect(promtool, "promtool is needed (Debian package prometheus)")
    r = subprocess.run([promtool, "check", "metrics"], input=text.encode(), capture_output=True, timeout=60)
    out = (r.stdout + r.stderr).decode()
    # promtool exits 1 for lint findings as well as parse errors; a parse error is "error while linting".
    expect("error while linting" not in out and "text format parsing error" not in out,
           f"{what}: promtool could not parse the exposition: {out[-2000:]}")
    expect_eq(r.returncode, 0, f"{what}: promtool check metrics: {out[-2000:]}")


def scrape(url, what, families):
    status, text, headers = http("GET", url)
    expect_eq(status, 200, f"{what} /metrics")
    expect(headers.get("Content-Type", "").startswith("text/plain; version=0.0.4"), f"{what}: {headers}")
    promtool_check(text, what)
    for f in families:
        expect(re.search(rf"^# TYPE {f} ", text, re.M), f"{what}: family {f} missing")
    expect(SUB not in text and "/subscriptions/" + SUB not in text, f"{what}: an ID appears in a label")
    return text


def register(arm):
    status, body, _ = http("PUT", f"{arm}/subscriptions/{SUB}?api-version=2.0",
                           {"state": "Registered", "registrationDate": "Thu, 20 Nov 2026 10:00:00 GMT",
                            "properties": {"tenantId": "72f988bf-86f1-41af-91ab-2d7cd011db47"}})
    expect(status in (200, 201), f"subscription PUT: {status} {body}")


def hcpctl(arm, *args):
    r = subprocess.run([e2e.ARGS.hcpctl, "--endpoint", arm, "-s", SUB, "-g", "ops", *args],
                       capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    expect_eq(r.returncode, 0, f"hcpctl {' '.join(args)}: {r.stdout.decode()[-1000:]} {r.stderr.decode()[-1000:]}")
    return r.stdout.decode()


FRONTEND = ["hcprp_frontend_requests_total", "hcprp_frontend_request_duration_seconds",
            "hcprp_frontend_requests_in_flight", "hcprp_frontend_bodies_refused_total",
            "hcprp_store_calls_total", "hcprp_store_call_duration_seconds"]
BACKEND = ["hcprp_backend_event_to_commit_seconds", "hcprp_backend_change_feed_lag_seconds",
           "hcprp_backend_checks_queued", "hcprp_backend_checks_running", "hcprp_backend_shards_held",
           "hcprp_backend_notifications_total", "hcprp_backend_notifications_pending", "hcprp_backend_orphans_collected_total",
           "hcprp_backend_subscription_sweeps_total", "hcprp_operations_started_total",
           "hcprp_operations_ended_total", "hcprp_operation_state_duration_seconds",
           "hcprp_operation_oldest_in_flight_age_seconds", "hcprp_operations_stuck",
           "hcprp_backend_deadline_expiries_total"]
SIMULATOR = ["hcprp_simulator_azure_calls_total", "hcprp_simulator_azure_operations_pending",
             "hcprp_simulator_orphaned_machines_total", "hcprp_simulator_first_party_group_deletions_total"]


def test_metrics_scrape(ctx):
    # One process running every part.
    arm, _, serve = ctx.serve(profile="demo", time_scale="0.2")
    serve_metrics = admin_lines(serve)
    register(arm)
    hcpctl(arm, "cluster", "create", "m1")
    text = scrape(serve_metrics, "serve", FRONTEND + BACKEND + SIMULATOR)
    expect(re.search(r'^hcprp_operations_ended_total\{request="Create",state="Succeeded"\} 1$', text, re.M),
           "serve: the create is not counted as ended")
    expect(re.search(r'^hcprp_backend_event_to_commit_seconds_count [1-9]', text, re.M),
           "serve: no event-to-commit latency recorded")

    # The parts as separate processes on one SQLite store.
    store = "sqlite://" + ctx.path("parts.db")
    cs_url, cs = ctx.clusters_service(profile="demo", time_scale="0.2")
    cs_metrics = admin_lines(cs)
    fe_arm, fe = ctx.frontend(store, cs_url, extra=["--data-dir", ctx.path("fe")])
    fe_metrics = admin_lines(fe)
    be = ctx.backend(store, cs_url, extra=["--data-dir", ctx.path("be")])
    be_metrics = admin_lines(be)
    register(fe_arm)
    hcpctl(fe_arm, "cluster", "create", "m2")
    scrape(cs_metrics, "clusters-service", SIMULATOR)
    fe_text = scrape(fe_metrics, "frontend", FRONTEND)
    expect("hcprp_backend_" not in fe_text and "hcprp_operations_started_total" not in fe_text,
           "frontend: backend families in a process without a backend")
    be_text = scrape(be_metrics, "backend", BACKEND + ["hcprp_store_calls_total"])
    expect("hcprp_frontend_requests_total" not in be_text, "backend: frontend families without a frontend")
    expect(re.search(r'^hcprp_operations_ended_total\{request="Create",state="Succeeded"\} 1$', be_text, re.M),
           "backend: the create is not counted as ended")


def test_admin_api(ctx):
    arm, _, serve = ctx.serve(profile="demo", time_scale="5")  # slow enough to see it in flight
    metrics = admin_lines(serve)
    admin = metrics.rsplit("/metrics", 1)[0]
    with open(ctx.path("serve", "admin-token")) as f:
        token = f.read().strip()
    auth = {"Authorization": "Bearer " + token}
    register(arm)
    hcpctl(arm, "cluster", "create", "a1", "--no-wait")
    status, body, _ = http("GET", f"{admin}/admin/operations")
    expect_eq(status, 401, "admin API without the token")
    expect_eq(json.loads(body)["error"]["code"], "AuthenticationFailed", "401 body")
    status, body, _ = http("GET", f"{admin}/admin/operations?subscription={SUB}", headers=auth)
    expect_eq(status, 200, f"list operations: {body}")
    ops = json.loads(body)["value"]
    expect_eq(len(ops), 1, f"non-terminal operations: {ops}")
    op = ops[0]["id"]
    rid = f"/subscriptions/{SUB}/resourceGroups/ops/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/a1"
    status, body, _ = http("GET", f"{admin}/admin/resources?id={urllib.parse.quote(rid, safe='')}", headers=auth)
    expect_eq(status, 200, f"show resource: {body}")
    expect_eq(json.loads(body)["operations"][0]["id"], op, "the resource's operation")
    status, body, _ = http("POST", f"{admin}/admin/operations/{SUB}/{op}/redrive", headers=auth)
    expect_eq(status, 202, f"redrive: {body}")
    status, body, _ = http("POST", f"{admin}/admin/operations/{SUB}/{op}/fail", {"reason": "e2e: break glass"},
                           headers=auth)
    expect_eq(status, 200, f"fail: {body}")
    status, body, _ = http("GET", f"{arm}{rid}?api-version=2026-10-01")
    expect_eq(json.loads(body)["properties"]["provisioningState"], "Failed", "ARM GET after fail")
    status, body, _ = http("GET", f"{admin}/admin/orphans", headers=auth)
    expect_eq(status, 200, f"orphans: {body}")
    expect("value" in json.loads(body), body)


def npm_install(ctx):
    work = ctx.path("console-test")
    os.makedirs(work)
    for f in ("package.json", "console.mjs"):
        shutil.copy(os.path.join(HERE, f), work)
    expect(shutil.which("node") and shutil.which("npm"), "node and npm are needed for the console test")
    r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=work,
                       capture_output=True, timeout=400, stdin=subprocess.DEVNULL)
    expect_eq(r.returncode, 0, f"npm install: {r.stderr.decode()[-3000:]}")
    return work


def test_console_browser(ctx):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    expect(chromium, "chromium is needed (Debian package chromium)")
    work = npm_install(ctx)
    arm, _, serve = ctx.serve(profile="demo", time_scale="2")
    admin_lines(serve)
    serve.wait_line(url_after("admin API:"))
    console = serve.wait_line(url_after("console:"))
    register(arm)
    shots = os.environ.get("HCPRP_OPS_ARTIFACTS") or ctx.path("screenshots")
    os.makedirs(shots, exist_ok=True)
    env = dict(os.environ, CHROMIUM=chromium, ARM=arm, CONSOLE=console, SUB=SUB, SHOTS=shots,
               PROFILE_DIR=ctx.path("chromium-profile"), HCPCTL=e2e.ARGS.hcpctl)
    r = subprocess.run(["node", "console.mjs"], cwd=work, capture_output=True, timeout=300, env=env,
                       stdin=subprocess.DEVNULL)
    out = r.stdout.decode("utf-8", "replace")
    expect_eq(r.returncode, 0, f"node console.mjs: {out[-3000:]} {r.stderr.decode()[-3000:]}")
    expect("1 passed, 0 failed" in out, f"console.mjs output: {out!r}")
    print(f"screenshots in {shots}", flush=True)


if __name__ == "__main__":
    import urllib.parse  # noqa: F401
    run_tests([test_metrics_scrape, test_admin_api, test_console_browser])
